"""The review page in Debian's Chromium: keyboard triage with a confirmation (Escape backs
out, Enter confirms, focus moves to the next proposal), a batch over a filter, accept with
edits, permalinks at 400 and 1280 px with no axe-core violations, and hostile proposals
(script tags, bidi overrides, terminal escapes, 5 MB of text) shown inert.

One server and one browser for the module; each test decides only its own proposals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.conftest import Runner
from tests.mcp.conftest import TOKEN
from tests.web.browser import axe_violations, launch, page_width
from tests.web.review_site import Seeded, seeded_site

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    with seeded_site(tmp_path_factory.mktemp("review-browser")) as s:
        yield s


def _page(browser: Any, s: Seeded, width: int = 1280) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(30_000)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs
    page.goto(f"{s.site.base}/ui/login")
    page.get_by_label("Server token").fill(TOKEN)
    page.get_by_label("Your name (recorded with each decision)").fill("alice")
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    return page


def _focused(page: Any) -> str:
    found: str = page.evaluate(
        "() => { const e = document.activeElement; const row = e.closest('li');"
        " return (row ? row.id + ' ' : '') + e.id + ' ' + e.tagName; }")
    return found


def _status(sediment: Runner, s: Seeded) -> dict[int, str]:
    return {p["proposal_id"]: p["status"] for p in sediment(
        "proposals", "list", "--dir", str(s.site.store), "--json").json()}


def test_keyboard_triage_confirms_and_a_batch_covers_the_filter(browser: Any, seeded: Seeded,
                                                                sediment: Runner) -> None:
    page = _page(browser, seeded)
    newest, middle, oldest = reversed(seeded.batch)
    page.goto(f"{seeded.site.base}/ui/queue?kind=batchkind")
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert _focused(page).startswith(f"p{middle} ")
    with page.expect_navigation():
        page.keyboard.press("a")
    expect(page.get_by_role("heading", name="Accept 1 proposal?")).to_be_visible()
    assert _focused(page) == "confirm BUTTON"
    with page.expect_navigation():
        page.keyboard.press("Escape")  # backs out: nothing was written
    assert _status(sediment, seeded)[middle] == "pending"
    page.keyboard.press("j")
    page.keyboard.press("j")
    with page.expect_navigation():
        page.keyboard.press("a")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.get_by_text(f"Accepted proposal {middle}", exact=False)).to_be_visible()
    assert _focused(page).startswith(f"p{oldest} ")  # the next one in the same filter
    assert _status(sediment, seeded)[middle] == "accepted"
    # Everything the filter selects, with the count confirmed.
    page.get_by_label("All 2 proposals this filter selects").check()
    page.get_by_label("Reason (required to reject, optional to accept)").fill("tenant keys "
                                                                             "are covered")
    with page.expect_navigation():
        page.get_by_role("button", name="Reject…").click()
    expect(page.get_by_role("heading", name="Reject 2 proposals?")).to_be_visible()
    with page.expect_navigation():
        page.get_by_role("button", name="Confirm: reject 2").click()
    expect(page.get_by_text("No pending proposal matches this filter.")).to_be_visible()
    statuses = _status(sediment, seeded)
    assert statuses[newest] == statuses[oldest] == "rejected"


def test_accept_with_edits_in_the_browser(browser: Any, seeded: Seeded,
                                          sediment: Runner) -> None:
    page = _page(browser, seeded)
    page.goto(f"{seeded.site.base}/ui/proposals/{seeded.edit}")
    page.keyboard.press("e")
    assert _focused(page) == "content TEXTAREA"
    page.get_by_label("Your version", exact=False).fill("Deploys freeze on Fridays at 12:00.")
    with page.expect_navigation():
        page.get_by_role("button", name="Accept with edits…").click()
    with page.expect_navigation():
        page.get_by_role("button", name="Confirm: accept with your edits").click()
    assert "/ui/proposals/" in page.url and _focused(page) == "title H1"
    shown = sediment("proposals", "show", str(seeded.edit), "--dir", str(seeded.site.store),
                     "--json").json()
    assert shown["status"] == "accepted" and shown["decisions"][0]["reviewer"] == "alice"
    user = sediment("inspect", "--layer", str(seeded.site.store / "AGENTS.user.db"), "--id",
                    str(shown["context_id"]), "--json").json()
    assert user["content"] == "Deploys freeze on Fridays at 12:00."


@pytest.mark.parametrize("width", [400, 1280])
def test_permalinks_are_accessible_and_hostile_text_is_inert(browser: Any, seeded: Seeded,
                                                             width: int) -> None:
    page = _page(browser, seeded, width)
    base = seeded.site.base
    conflict = seeded.site.proposals[1]
    for path in ("/ui/queue", "/ui/queue?conflict=yes&sort=oldest",
                 f"/ui/proposals/{conflict}", f"/ui/proposals/{seeded.hostile}"):
        page.goto(base + path)
        assert page_width(page) <= width, path
        assert axe_violations(page) == [], path
    page.goto(f"{base}/ui/proposals/{conflict}")
    expect(page.locator("pre.diff ins")).to_have_text("NOT ")
    page.goto(f"{base}/ui/proposals/{seeded.hostile}")
    text = page.locator(".markdown").inner_text()
    assert "<script>" in text and "\\u202e" in text and "\\x1b[2J" in text
    assert page.locator(".markdown script, .markdown img, .markdown a[href^=javascript]"
                        ).count() == 0
    assert page.title().startswith("Proposal ") and page.dialogs == []
    page.goto(f"{base}/ui/proposals/{seeded.big}")
    expect(page.get_by_text("Showing the first 200,000 of", exact=False)).to_be_visible()
    assert page_width(page) <= width
    page.goto(f"{base}/ui/queue")
    page.get_by_label("Text").fill("")
    page.locator("#sel" + str(seeded.hostile)).check()
    with page.expect_navigation():
        page.get_by_role("button", name="Accept…").click()
    assert page_width(page) <= width and axe_violations(page) == []
    assert page.dialogs == []

"""The page in a real browser: sign in, review proposals an MCP client wrote, check the
layers with the CLI, search and read an explanation, forget a memory and check it with the
CLI; untrusted content never runs; no horizontal scrolling at 400 px; no axe-core
violations on any page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from sediment.config import Environment, process_actor
from tests.conftest import Runner
from tests.mcp.conftest import TOKEN
from tests.web.browser import axe_violations, launch, page_width
from tests.web.conftest import Site

pytestmark = pytest.mark.timeout(240)
PAGES = ["/ui/queue", "/ui/proposals/{proposal}", "/ui/layers",
         "/ui/search?q=billing+headers&mode=lexical",
         "/ui/memories", "/ui/memories/{memory}", "/ui/memories/{memory}/forget",
         "/ui/memories/forget-all", "/ui/context"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch()


def _signed_in(browser: Any, site: Site, name: str, width: int = 1100,
               javascript: bool = True) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True,
                                  java_script_enabled=javascript)
    page = context.new_page()
    page.set_default_timeout(30_000)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs
    page.goto(f"{site.base}/ui/queue")
    assert "/ui/login" in page.url
    page.get_by_label("Server token").fill(TOKEN)
    page.get_by_label("Your name (recorded with each decision)").fill(name)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    assert "/ui/login" not in page.url, page.locator("main").inner_text()
    return page


def test_review_a_queue_written_over_mcp(browser: Any, site: Site, sediment: Runner) -> None:
    page = _signed_in(browser, site, "alice")
    accepted, rejected, hostile = site.proposals
    expect(page.get_by_text("3 pending proposals")).to_be_visible()
    # The hostile chunk is shown as text: no script ran, no handler fired.
    page.locator(f"#p{hostile} .title").hover()
    assert page.title() == "Review queue · Sediment" and page.dialogs == []
    assert page.locator("ol.queue img, ol.queue script, ol.queue b").count() == 0
    assert "<script>" in page.locator(f"#p{hostile} .title").inner_text()
    # Keyboard: newest first, so the first proposal written is third: j three times, o.
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.evaluate("() => document.activeElement.closest('li').id") == f"p{accepted}"
    with page.expect_navigation():
        page.keyboard.press("o")
    with page.expect_navigation():
        page.keyboard.press("a")  # asks first
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.get_by_text(f"accepted proposal {accepted}", exact=False)).to_be_visible()
    # The focus moved on to the next proposal, whose source resolved to its file's line.
    assert page.url.endswith(f"/ui/proposals/{rejected}")
    assert page.evaluate("() => document.activeElement.id") == "title"
    assert "All billing calls need X-Account." in page.locator("main").inner_text()
    page.get_by_label("Reason (required to reject, optional to accept)").fill(
        "duplicates the billing invariant")
    with page.expect_navigation():
        page.get_by_role("button", name="Reject…").click()
    with page.expect_navigation():
        page.get_by_role("button", name="Confirm: reject 1").click()
    expect(page.get_by_text(f"Rejected proposal {rejected}", exact=False)).to_be_visible()
    page.goto(f"{site.base}/ui/queue")
    expect(page.get_by_text("1 pending proposal.", exact=False)).to_be_visible()
    statuses = {p["proposal_id"]: (p["status"], p["decisions"])
                for p in sediment("proposals", "list", "--dir", str(site.store),
                                  "--json").json()}
    assert statuses[accepted][0] == "accepted" and statuses[rejected][0] == "rejected"
    assert statuses[rejected][1][0]["reason"] == "duplicates the billing invariant"
    assert statuses[accepted][1][0]["reviewer"] == "alice"
    layers = {r["layer"]: r for r in sediment("layers", "--dir", str(site.store),
                                              "--json").json()["layers"]}
    assert layers["user"]["chunks"] == 1
    assert sediment("validate", str(site.store / "AGENTS.user.db"),
                    str(site.store / "AGENTS.delta.db")).code == 0


def test_search_explains_and_every_page_is_accessible(browser: Any, site: Site) -> None:
    page = _signed_in(browser, site, "bob", width=400)
    with page.expect_navigation():
        page.get_by_role("link", name="Search").click()
    page.get_by_label("Query").fill("billing headers")
    page.get_by_label("Mode").select_option("lexical")
    with page.expect_navigation():
        page.get_by_role("button", name="Search").click()
    page.locator("details summary").first.click()
    explain = page.locator("details").first.inner_text()
    assert "BM25" in explain and "Fused" in explain and "Hides" in explain
    for path in PAGES:
        page.goto(site.base + path.format(memory=site.memories[1],
                                          proposal=site.proposals[1]))
        assert page_width(page) <= 400, path
        assert axe_violations(page) == [], path
    page.goto(site.base + "/ui/login")
    assert axe_violations(page) == []
    assert page.dialogs == []


def test_reading_works_without_javascript(browser: Any, site: Site) -> None:
    page = _signed_in(browser, site, "dana", javascript=False)
    expect(page.get_by_text("3 pending proposals")).to_be_visible()
    assert page.locator("ol.queue > li").count() == 3
    page.goto(site.base + "/ui/search?q=billing&mode=lexical")
    assert page.locator("article.hit").count() >= 1
    page.goto(site.base + "/ui/layers")
    expect(page.get_by_role("heading", name="Diff of delta against base and user")).to_be_visible()
    page.goto(site.base + "/ui/memories")
    assert page.locator("article.memory").count() == len(site.memories)
    page.goto(f"{site.base}/ui/memories/{site.memories[0]}")
    expect(page.get_by_role("heading", name="Versions, newest first")).to_be_visible()
    page.goto(site.base + "/ui/context")
    assert page.locator("article.hit").count() >= 4


def test_forget_a_memory_and_hostile_memories_never_run(browser: Any, site: Site,
                                                         sediment: Runner) -> None:
    page = _signed_in(browser, site, "erin")
    with page.expect_navigation():
        page.get_by_role("link", name="Memories").click()
    kept, target, hostile = site.memories[0], site.memories[1], site.memories[2]
    assert "<script>" in page.locator(f"#m-{hostile} pre.content").inner_text()
    page.get_by_text("hover", exact=False).first.hover()
    assert page.title() == "Memories · Sediment" and page.dialogs == []
    assert page.locator("article img, article script, article b").count() == 0
    with page.expect_navigation():
        page.get_by_role("link", name=f"Forget memory {target}").click()
    expect(page.get_by_role("heading", name=f"Forget memory {target}?")).to_be_visible()
    with page.expect_navigation():
        page.get_by_role("button", name=f"Forget memory {target}").click()
    expect(page.get_by_text(f"Forgot memory {target}.")).to_be_visible()
    assert page.locator(f"#m-{target}").count() == 0 and page.locator(f"#m-{kept}").count() == 1
    listed = sediment("memory", "list", "--actor", process_actor(Environment.read()),
                      "--dir", str(site.store), "--json").json()
    ids = {m["id"] for m in listed["memories"]}
    assert target not in ids and kept in ids
    page.goto(f"{site.base}/ui/memories/{hostile}")
    page.get_by_text("hover", exact=False).first.hover()
    assert page.title() == f"Memory {hostile} · Sediment" and page.dialogs == []
    page.goto(f"{site.base}/ui/context")
    page.get_by_text("hover", exact=False).first.hover()
    assert page.title() == "Progressive context · Sediment" and page.dialogs == []
    assert page.locator("article img, article script, article b").count() == 0
    expect(page.get_by_role("heading", name="Latest iterations")).to_be_visible()

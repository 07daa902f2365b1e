"""The page over the team server (PostgreSQL) in a real browser: sign in with a token from
the database, accept one proposal and reject one with a reason, check the store with the
CLI, and hostile content (script tags, event handlers) never runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.conftest import Runner
from tests.pg.web import PgSite, pg_site
from tests.web.browser import axe_violations, launch, page_width

pytestmark = pytest.mark.timeout(300)
PAGES = ["/ui/queue", "/ui/layers", "/ui/search?q=billing+headers&mode=lexical",
         "/ui/memories", "/ui/context"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch()


def _signed_in(browser: Any, site: PgSite, actor: str, width: int = 1100) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(30_000)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs
    page.goto(f"{site.base}/ui/queue")
    assert "/ui/login" in page.url
    page.get_by_label("Server token").fill(site.tokens[actor])
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    assert "/ui/login" not in page.url, page.locator("main").inner_text()
    return page


def test_review_over_the_team_server_in_a_browser(browser: Any, pg_url: str, tmp_path: Path,
                                                  sediment: Runner) -> None:
    with pg_site(pg_url, tmp_path) as site:
        page = _signed_in(browser, site, "alice")
        accepted, rejected, hostile = site.proposals
        expect(page.get_by_text("3 pending proposals")).to_be_visible()
        page.locator(f"#p{hostile} .title").hover()
        assert page.title() == "Review queue · Sediment" and page.dialogs == []
        assert page.locator("ol.queue img, ol.queue script, ol.queue b").count() == 0
        assert "<script>" in page.locator(f"#p{hostile} .title").inner_text()
        page.get_by_label("Select proposal", exact=False).nth(2).check()
        with page.expect_navigation():
            page.get_by_role("button", name="Accept…").click()
        with page.expect_navigation():
            page.get_by_role("button", name="Confirm: accept 1").click()
        expect(page.get_by_text(f"accepted proposal {accepted}", exact=False)).to_be_visible()
        page.goto(f"{site.base}/ui/proposals/{rejected}")
        assert "proposed by walt" in page.locator("main").inner_text()
        page.get_by_label("Reason (required to reject, optional to accept)").fill(
            "duplicates the billing invariant")
        with page.expect_navigation():
            page.get_by_role("button", name="Reject…").click()
        with page.expect_navigation():
            page.get_by_role("button", name="Confirm: reject 1").click()
        expect(page.get_by_text(f"Rejected proposal {rejected}", exact=False)).to_be_visible()
        page.goto(f"{site.base}/ui/queue")
        expect(page.get_by_text("1 pending proposal.", exact=False)).to_be_visible()
        listed = sediment("proposals", "list", "--store", site.url, "--json")
        assert listed.code == 0, listed.err
        statuses = {p["proposal_id"]: (p["status"], p["decisions"]) for p in listed.json()}
        assert statuses[accepted][0] == "accepted" and statuses[rejected][0] == "rejected"
        assert statuses[rejected][1][0]["reason"] == "duplicates the billing invariant"
        assert statuses[accepted][1][0]["reviewer"] == "alice"
        assert statuses[hostile][0] == "pending"
        found = sediment("search", "--store", site.url, "--embedder", "hash", "--mode",
                         "lexical", "--layers", "user", "--json", "Releases Tuesday")
        assert found.code == 0, found.err
        assert [r["layer"] for r in found.json()["results"]] == ["user"]

        page.goto(f"{site.base}/ui/layers")
        expect(page.get_by_text("signatures are file-only", exact=False).first).to_be_visible()
        page.goto(f"{site.base}/ui/search?q=billing+headers&mode=lexical")
        page.locator("details summary").first.click()
        explain = page.locator("details").first.inner_text()
        assert "BM25" in explain and "Fused" in explain
        assert page.dialogs == []


def test_personal_pages_over_the_team_server_in_a_browser(browser: Any, pg_url: str,
                                                          tmp_path: Path) -> None:
    with pg_site(pg_url, tmp_path) as site:
        page = _signed_in(browser, site, "walt", width=400)
        hostile = site.memories[2]
        with page.expect_navigation():
            page.get_by_role("link", name="Memories").click()
        assert "<script>" in page.locator(f"#m-{hostile} pre.content").inner_text()
        page.get_by_text("hover", exact=False).first.hover()
        assert page.title() == "Memories · Sediment" and page.dialogs == []
        page.goto(f"{site.base}/ui/context")
        page.get_by_text("hover", exact=False).first.hover()
        assert page.title() == "Progressive context · Sediment" and page.dialogs == []
        assert page.locator("article img, article script, article b").count() == 0
        expect(page.get_by_role("heading", name="Latest iterations")).to_be_visible()
        for path in PAGES:
            page.goto(site.base + path)
            assert page_width(page) <= 400, path
            assert axe_violations(page) == [], path

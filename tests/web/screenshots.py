"""``python -m tests.web.screenshots DIR``: a PNG of each page of the web UI for docs/ui.md.

Run by ``./run docs`` (never by CI): a store with proposals, memories and context items
written over MCP (one memory then edited in the page, to show a version chain), the same
headless Chromium as the browser tests, a 1100 x 900 window, one file per page.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tests.mcp.conftest import TOKEN, stop
from tests.web.browser import ARGS, CHROMIUM
from tests.web.conftest import start_site

SHOTS = [("login", "/ui/login"), ("queue", "/ui/queue"), ("proposal", "/ui/proposals/{proposal}"),
         ("layers", "/ui/layers"),
         ("search", "/ui/search?q=billing+headers&mode=hybrid"), ("memories", "/ui/memories"),
         ("memory", "/ui/memories/{memory}"), ("forget", "/ui/memories/{memory}/forget"),
         ("context", "/ui/context")]


def main(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # The server writes actors' memories and reads tokens here, never in the user's.
        os.environ.update({"SEDIMENT_DATA_DIR": f"{tmp}/data", "SEDIMENT_ACTOR": "alice",
                           "SEDIMENT_USER_CONFIG": f"{tmp}/config/config.toml",
                           "SEDIMENT_TOKENS_FILE": f"{tmp}/config/tokens.json"})
        site = start_site(Path(tmp))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(f"{site.base}/ui/login")
            page.screenshot(path=str(out / "login.png"))
            page.get_by_label("Server token").fill(TOKEN)
            page.get_by_label("Your name (recorded with each decision)").fill("alice")
            with page.expect_navigation():
                page.get_by_role("button", name="Sign in").click()
            page.goto(f"{site.base}/ui/memories/{site.memories[1]}")
            page.get_by_label("Text").fill("The staging database is reset every night at "
                                           "03:00 UTC (moved from 02:00).")
            with page.expect_navigation():
                page.get_by_role("button", name="Save a new version").click()
            edited = page.url.rsplit("/", 1)[1]
            for name, path in SHOTS[1:]:
                page.goto(site.base + path.format(memory=edited, proposal=site.proposals[1]))
                if name == "search":
                    page.locator("details summary").first.click()
                page.screenshot(path=str(out / f"{name}.png"),
                                full_page=name not in ("queue", "context"))
                print(out / f"{name}.png")
            browser.close()
        stop(site.server.process)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/ui"))

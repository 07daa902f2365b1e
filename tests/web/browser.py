"""Headless Chromium from Debian, driven by Playwright's Python client (never its download).

Missing browser: skipped with the reason, except under CI, which must run these tests.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CI, REPO

CHROMIUM = Path("/usr/bin/chromium")
AXE = REPO / "build" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def _missing(what: str) -> None:
    if CI:
        pytest.fail(f"{what}; CI must run the browser tests", pytrace=False)
    pytest.skip(what)


def launch() -> Iterator[Any]:
    if not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None:
        _missing(f"{CHROMIUM} is missing: `./run test` installs Debian's chromium as root")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, timeout=60_000)
        try:
            yield browser
        finally:
            browser.close()


def axe_violations(page: Any) -> list[dict[str, Any]]:
    if not AXE.exists():
        _missing(f"{AXE} is missing: `./run test` installs axe-core from npm")
    page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(
        "async () => (await axe.run(document)).violations.map("
        "v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target)}))")
    return found


def page_width(page: Any) -> int:
    width: int = page.evaluate("() => document.documentElement.scrollWidth")
    return width

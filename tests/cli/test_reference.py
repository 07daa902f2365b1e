"""docs/cli.md is the commands' own help, and every command is in it."""

from __future__ import annotations

from sediment.cli.reference import render
from tests.conftest import REPO


def test_cli_reference_is_current() -> None:
    doc = (REPO / "docs" / "cli.md").read_text()
    assert doc == render(), "docs/cli.md is out of date: run ./run docs"
    for name in ("compile", "search", "inspect", "validate", "write", "layers", "serve",
                 "diff", "proposals accept", "promote", "compact", "sign", "verify",
                 "export", "import", "kcp validate"):
        assert f"## sediment {name}\n" in doc

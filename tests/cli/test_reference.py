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


def test_every_command_but_serve_takes_json() -> None:
    import click

    from sediment.cli import cli
    from sediment.cli.reference import _walk

    missing = [" ".join(path) for path, cmd in _walk(cli, ["sediment"])
               if not isinstance(cmd, click.Group) and path[-1] != "serve"
               and "--json" not in {o for p in cmd.params for o in getattr(p, "opts", [])}]
    assert missing == []

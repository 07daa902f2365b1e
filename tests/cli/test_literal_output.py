"""Chunk text is data (issue 15, items 1-2): printed literally by every command that shows
it, control characters escaped in human output, JSON exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Runner

MARKUP = "Markup [/nonexistent] and [/] and [bold]x[/bold] :smile: [timeouts](quickstart.md#t)"
ESCAPES = "Evil \x1b[2J\x1b[31mred\x1b[0m \x9b31m and \u202eright-to-left\u202c end"


def store(sediment: Runner, root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "guide.md").write_text(f"# Guide\n\n{MARKUP}\n")
    r = sediment("compile", "--root", str(root), "--include", "*.md",
                 "--out", str(root / "AGENTS.db"))
    assert r.code == 0, r.err
    for content in (MARKUP, ESCAPES):
        w = sediment("write", "--dir", str(root), "--scope", "delta", "--kind", "note",
                     "--content", content, "--confidence", "0.5", "--json")
        assert w.code == 0, w.err
    return root


def assert_safe(text: str) -> None:
    """No raw escape, CSI or bidirectional control reaches the terminal."""
    assert "\x1b" not in text and "\x9b" not in text and "\u202e" not in text, repr(text)


def test_search_prints_markup_literally_and_escapes_controls(sediment: Runner,
                                                             tmp_path: Path) -> None:
    root = store(sediment, tmp_path / "repo")
    for query in ("markup nonexistent timeouts", "evil red right end"):
        r = sediment("search", query, "--dir", str(root), "--full")
        assert r.code == 0, r.err
        assert_safe(r.out)
    r = sediment("search", "markup nonexistent timeouts", "--dir", str(root), "--full")
    assert "[/nonexistent] and [/] and [bold]x[/bold] :smile:" in r.out
    assert "[timeouts](quickstart.md#t)" in r.out
    r = sediment("search", "evil red right end", "--dir", str(root), "--full", "-k", "1")
    assert "\\x1b[2J\\x1b[31mred\\x1b[0m \\x9b31m and \\u202eright-to-left\\u202c" in r.out


def test_json_keeps_the_exact_text(sediment: Runner, tmp_path: Path) -> None:
    root = store(sediment, tmp_path / "repo")
    r = sediment("search", "evil red right end", "--dir", str(root), "--json")
    assert r.code == 0, r.err
    assert_safe(r.out)
    contents = {h["content"] for h in r.json()["results"]}
    assert ESCAPES in contents and MARKUP in contents
    export = sediment("export", str(root / "AGENTS.delta.db"), "--out", "-")
    lines = [json.loads(line) for line in export.out.splitlines()[1:]]
    assert ESCAPES in {x["content"] for x in lines}


def test_diff_inspect_and_proposals_are_literal(sediment: Runner, tmp_path: Path) -> None:
    root = store(sediment, tmp_path / "repo")
    ids = [h["id"] for h in sediment("search", "evil markup", "--dir", str(root), "--layers",
                                     "delta", "--json").json()["results"]]
    for chunk_id in ids:
        p = sediment("propose", str(chunk_id), "--dir", str(root))
        assert p.code == 0, p.err
    runs = [sediment("diff", "--dir", str(root)),
            sediment("proposals", "list", "--dir", str(root)),
            *(sediment("inspect", str(root / "AGENTS.delta.db"), "--id", str(i)) for i in ids),
            sediment("proposals", "show", "1", "--dir", str(root))]
    for r in runs:
        assert r.code in (0, 1), r.err
        assert_safe(r.out + r.err)
    diff = runs[0].out
    assert "[/nonexistent]" in diff and "\\x1b[2J" in diff
    inspect = "".join(r.out for r in runs[2:-1])
    assert "[/nonexistent] and [/] and [bold]x[/bold] :smile:" in inspect
    assert "\\u202eright-to-left" in inspect


def test_kcp_query_escapes_manifest_text(sediment: Runner, tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text("# Guide\n")
    (tmp_path / "knowledge.yaml").write_text(
        'kcp_version: "0.1"\nproject: demo\nunits:\n  - id: guide\n    path: guide.md\n'
        '    intent: "Deploys [/nonexistent] \\e[2J cleared"\n    scope: global\n'
        "    audience: [human]\n    triggers: [deploy]\n")
    r = sediment("kcp", "query", "deploy", "--root", str(tmp_path))
    assert r.code == 0, r.err
    assert_safe(r.out)
    assert "[/nonexistent] \\x1b[2J cleared" in r.out


@pytest.mark.parametrize("name", ["a\x1b[2Jb.md"])
def test_file_names_in_messages_are_escaped(sediment: Runner, tmp_path: Path,
                                            name: str) -> None:
    (tmp_path / name).write_bytes(b"\x00binary")
    r = sediment("compile", "--root", str(tmp_path), "--include", "*.md", "--out",
                 str(tmp_path / "AGENTS.db"), "--allow-empty")
    assert r.code == 0, r.err
    assert_safe(r.err)
    assert "a\\x1b[2Jb.md" in r.err

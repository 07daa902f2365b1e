"""Errors instead of silent no-ops (issue 15, items 9-10): explicit paths that do not exist,
a compile that matches nothing, a KCP query over invalid manifests only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import Runner


@pytest.mark.parametrize("args,message", [
    (("search", "x", "--base", "/nonexistent/AGENTS.db"),
     "--base /nonexistent/AGENTS.db: no such layer file"),
    (("search", "x", "--dir", "/nonexistent"), "--dir /nonexistent: no such directory"),
    (("search", "x", "--layers", ""), "--layers is empty"),
    (("search", "x", "--layers", " , "), "--layers is empty"),
    (("layers", "--user", "/nonexistent/AGENTS.user.db"), "--user /nonexistent/AGENTS.user.db"),
    (("diff", "--dir", "/nonexistent"), "--dir /nonexistent: no such directory"),
    (("write", "--kind", "note", "--content", "x", "--confidence", "0.5", "--local",
      "/nonexistent/dir/AGENTS.local.db"), "no such directory"),
    (("index", "status", "/nonexistent/AGENTS.db"), "/nonexistent/AGENTS.db: no such layer"),
])
def test_explicit_missing_paths_are_errors(sediment: Runner, args: tuple[str, ...],
                                           message: str) -> None:
    r = sediment(*args)
    assert r.code == 1, (r.out, r.err)
    assert r.err.startswith("Error: ") and message in r.err, r.err


def test_write_may_create_an_explicit_layer(sediment: Runner, tmp_path: Path) -> None:
    target = tmp_path / "new.local.db"
    r = sediment("write", "--kind", "note", "--content", "x", "--confidence", "0.5",
                 "--local", str(target), "--dir", str(tmp_path))
    assert r.code == 0, r.err
    assert target.exists()


def test_compile_matching_nothing_fails_unless_allowed(sediment: Runner,
                                                       tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not markdown\n")
    out = tmp_path / "AGENTS.db"
    r = sediment("compile", "--root", str(tmp_path), "--include", "docs/**/*.md", "--out",
                 str(out))
    assert r.code == 1, (r.out, r.err)
    assert "no file matched" in r.err and "docs/**/*.md" in r.err and "--allow-empty" in r.err
    assert not out.exists()
    r = sediment("compile", "--root", str(tmp_path), "--include", "docs/**/*.md", "--out",
                 str(out), "--allow-empty")
    assert r.code == 0, r.err
    assert "warning: no file matched" in r.err and out.exists()


def test_kcp_query_with_only_invalid_manifests_fails(sediment: Runner, tmp_path: Path) -> None:
    (tmp_path / "knowledge.yaml").write_text("kcp_version: '0.1'\nunits: [{id: 7}]\n")
    r = sediment("kcp", "query", "deploy", "--root", str(tmp_path))
    assert r.code == 1, (r.out, r.err)
    assert "INVALID" in r.err and "error" in r.err
    assert r.err.rstrip().splitlines()[-1].startswith("Error: every knowledge.yaml found is "
                                                      "invalid")
    j = sediment("kcp", "query", "deploy", "--root", str(tmp_path), "--json")
    assert j.code == 1 and j.json()["invalid_manifests"] and j.json()["errors"]

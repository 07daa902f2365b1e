"""``sediment import --from`` and ``sediment export --to`` as people run them: the real
command, real files, a fresh layer directory and user data directory per test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.interop.samples import write_graph, write_mem0, write_notes, write_repo

ACTOR = {"SEDIMENT_ACTOR": "ada"}


def _source(fmt: str, tmp_path: Path) -> Path:
    if fmt == "mcp-memory":
        return write_graph(tmp_path / "memory.jsonl")
    if fmt == "mem0":
        return write_mem0(tmp_path / "mem0.json")
    if fmt == "basic-memory":
        return write_notes(tmp_path / "notes")
    return write_repo(tmp_path / "repo")


@pytest.mark.parametrize("fmt", ["mcp-memory", "mem0", "basic-memory", "claude", "agents-md",
                                 "cursor", "copilot", "cline"])
def test_import_export_import_again(sediment: Runner, tmp_path: Path, fmt: str) -> None:
    store = tmp_path / "store"
    store.mkdir()
    src = _source(fmt, tmp_path)
    first = sediment("import", "--from", fmt, str(src), "--dir", str(store), "--json",
                     env=ACTOR)
    assert first.code == 0, first.err
    report = first.json()
    assert report["created"] > 0 and report["dry_run"] is False
    actors = ",".join(report["actors"])
    single = fmt in ("mcp-memory", "mem0")
    out = tmp_path / ("out.json" if single else "out")
    exported = sediment("export", "--to", fmt, "--out", str(out), "--dir", str(store),
                        "--actor", actors, "--json")
    assert exported.code == 0, exported.err
    assert exported.json()["memories"] == report["created"]
    again = sediment("import", "--from", fmt, str(out), "--dir", str(store), "--json",
                     env=ACTOR)
    assert again.code == 0, again.err
    assert (again.json()["created"], again.json()["existing"]) == (0, report["created"])


def test_dry_run_prints_what_would_be_written_and_writes_nothing(sediment: Runner,
                                                                 tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    repo = write_repo(tmp_path / "repo")
    dry = sediment("import", "--from", "claude", str(repo), "--dir", str(store), "--dry-run",
                   env=ACTOR)
    assert dry.code == 0, dry.err
    assert "new    [instruction] CLAUDE.md:6 Run the suite with `-n 0`" in dry.out
    assert "new    [instruction] docs/style.md:2 Type hints everywhere" in dry.out
    assert "would save 7 memories (0 already stored) as ada in project scope" in dry.out
    assert "@../secrets.md is outside" in dry.err
    listed = sediment("memory", "list", "--dir", str(store), "--json", env=ACTOR)
    assert listed.json()["total"] == 0
    assert sorted(p.name for p in store.iterdir() if p.suffix == ".db") == []


def test_a_bad_line_is_an_error_naming_it_not_a_traceback(sediment: Runner,
                                                          tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    src = tmp_path / "memory.jsonl"
    src.write_text('{"type": "entity", "name": "a", "entityType": "t", "observations": []}\n'
                   '{"type": "entity", "name": "b", "entityType": "t", "observations": [}\n')
    r = sediment("import", "--from", "mcp-memory", str(src), "--dir", str(store), env=ACTOR)
    assert r.code == 1
    assert r.err.startswith("Error: memory.jsonl:2: not JSON: Expecting value")
    assert "Traceback" not in r.err
    listed = sediment("memory", "list", "--dir", str(store), "--json", env=ACTOR)
    assert listed.json()["total"] == 0


def test_untrusted_text_is_printed_literally(sediment: Runner, tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    src = tmp_path / "memory.jsonl"
    src.write_text(json.dumps({"type": "entity", "name": "x", "entityType": "t",
                               "observations": ["\x1b[2Jwiped\u202e"]}) + "\n")
    r = sediment("import", "--from", "mcp-memory", str(src), "--dir", str(store),
                 "--dry-run", env=ACTOR)
    assert r.code == 0, r.err
    assert "\x1b" not in r.out and "\u202e" not in r.out
    assert "x: \\x1b[2Jwiped\\u202e" in r.out


def test_options_of_the_two_modes_do_not_mix(sediment: Runner, tmp_path: Path) -> None:
    src = write_graph(tmp_path / "memory.jsonl")
    r = sediment("import", "--from", "mcp-memory", str(src), "--into", "user")
    assert r.code == 2 and "--into and --fresh-ids are for JSON Lines" in r.err
    r = sediment("import", "--from", "mcp-memory", str(src), "--scope", "delta")
    assert r.code == 2 and "--scope is a memory scope" in r.err
    r = sediment("import", str(src))
    assert r.code == 2 and "--into" in r.err
    r = sediment("export", "--out", "x.jsonl")
    assert r.code == 2 and "give the LAYER file" in r.err
    r = sediment("export", "--to", "basic-memory", "--out", "-", "--dir", str(tmp_path))
    assert r.code == 2 and "writes a directory of files" in r.err

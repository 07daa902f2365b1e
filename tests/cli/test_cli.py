"""End-to-end: the real ``sediment`` command on real files in temporary directories."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest

from sediment.format import LayerFile
from tests import zygote
from tests.cli.conftest import Runner

GUIDE = """# Guide

Sediment keeps knowledge in layers.

## Install

Run the installer script and wait for it.

```sh
# not a heading
pip install sedimentdb
```

## Deploy

The deploy job pushes containers to the staging cluster every night.
"""


def make_docs(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "guide.md").write_text(GUIDE)
    (root / "docs" / "adr").mkdir()
    (root / "docs" / "adr" / "0001-postgres.md").write_text(
        "# Use PostgreSQL\n\nWe chose PostgreSQL for JSON support.\n")
    (root / "README.md").write_text("# Project\n\nBilling requests MUST carry X-Account.\n")
    (root / "docs" / "blob.md").write_bytes(b"\x00\x01binary")
    (root / "docs" / "latin1.md").write_bytes("caf\xe9 au lait".encode("latin-1"))
    return root


def compile_docs(sediment: Runner, root: Path, *extra: str) -> None:
    r = sediment("compile", "--root", str(root), "--include", "**/*.md",
                 "--out", str(root / "AGENTS.db"), *extra)
    assert r.code == 0, r.err


def test_compile_is_deterministic_and_reports_skips(sediment: Runner, tmp_path: Path) -> None:
    root = make_docs(tmp_path / "repo")
    r = sediment("compile", "--root", str(root), "--include", "**/*.md",
                 "--out", str(root / "AGENTS.db"))
    assert r.code == 0, r.err
    assert "compiled" in r.out and "2 skipped" in r.out
    assert "docs/blob.md" in r.err and "binary" in r.err
    assert "docs/latin1.md" in r.err and "UTF-8" in r.err
    first = hashlib.sha256((root / "AGENTS.db").read_bytes()).hexdigest()
    r2 = sediment("compile", "--root", str(root), "--include", "**/*.md",
                  "--out", str(root / "AGENTS.db"), "--json")
    assert r2.code == 0
    report = r2.json()
    assert report["sha256"] == first
    assert report["embedded"] == 0 and report["cached"] == report["chunks"]
    f = LayerFile.open(root / "AGENTS.db")
    chunks = list(f.chunks())
    assert f.validate() == []
    sources = {c.sources[0] for c in chunks}
    assert {"docs/guide.md:1", "docs/guide.md:5", "docs/guide.md:14", "README.md:1"} <= sources
    fence = next(c for c in chunks if "pip install" in c.content)
    assert "# not a heading" in fence.content and fence.content.startswith("## Install")
    assert all(c.author == "human" and c.confidence == 1.0 for c in chunks)
    assert f.embedding_profile and f.embedding_profile["backend"] == "hash"


def test_compile_kind_rules_and_i8(sediment: Runner, tmp_path: Path) -> None:
    root = make_docs(tmp_path / "repo")
    compile_docs(sediment, root, "--kind-rule", "docs/adr/**=decision", "--element-type", "i8")
    f = LayerFile.open(root / "AGENTS.db")
    kinds = {c.sources[0]: c.kind for c in f.chunks()}
    assert kinds["docs/adr/0001-postgres.md:1"] == "decision"
    assert kinds["README.md:1"] == "canonical"
    assert f.element_type == "i8"
    r = sediment("search", "PostgreSQL JSON", "--dir", str(root), "--kind", "decision",
                 "--json")
    assert r.code == 0, r.err
    assert [x["kind"] for x in r.json()["results"]] == ["decision"]


def test_created_at_comes_from_sources(sediment: Runner, tmp_path: Path) -> None:
    root = make_docs(tmp_path / "repo")
    compile_docs(sediment, root, "--embedder", "hash")
    assert {c.created_at_ms for c in LayerFile.open(root / "AGENTS.db").chunks()} == {0}
    r = sediment("compile", "--root", str(root), "--include", "**/*.md", "--out",
                 str(root / "B.db"), env={"SOURCE_DATE_EPOCH": "1700000000"})
    assert r.code == 0
    assert {c.created_at_ms for c in LayerFile.open(root / "B.db").chunks()} == {
        1_700_000_000_000}


def test_search_write_and_explain(sediment: Runner, tmp_path: Path) -> None:
    root = make_docs(tmp_path / "repo")
    compile_docs(sediment, root)
    r = sediment("search", "deploy staging cluster", "--dir", str(root))
    assert r.code == 0, r.err
    assert "staging cluster" in r.out and "base" in r.out
    w = sediment("write", "--dir", str(root), "--scope", "local", "--kind", "runbook",
                 "--content", "Rollbacks of the staging cluster use helm rollback.",
                 "--confidence", "0.7", "--source", "docs/guide.md:14", "--json")
    assert w.code == 0, w.err
    new_id = w.json()["id"]
    r = sediment("search", "helm rollback staging", "--dir", str(root), "--json", "--explain")
    top = r.json()["results"][0]
    assert (top["id"], top["layer"], top["kind"]) == (new_id, "local", "runbook")
    assert top["sources"] == ["docs/guide.md:14"] and top["author"] == "human"
    assert set(top["explain"]) >= {"vector_score", "vector_rank", "bm25_score", "bm25_rank",
                                   "fused_score", "layer", "hidden_versions"}
    r = sediment("search", "helm rollback", "--dir", str(root), "--layers", "base", "--json")
    assert all(x["layer"] == "base" for x in r.json()["results"])
    r = sediment("search", "helm rollback", "--dir", str(root), "--explain")
    assert "fused" in r.out and "time:" in r.out


def test_inspect_and_validate(sediment: Runner, tmp_path: Path) -> None:
    root = make_docs(tmp_path / "repo")
    compile_docs(sediment, root)
    db = str(root / "AGENTS.db")
    r = sediment("inspect", db)
    assert r.code == 0 and "string dictionary" in r.out and "profile:" in r.out
    info = sediment("inspect", db, "--json").json()
    assert info["chunks"] > 3 and info["embedding"]["dim"] == 384
    one = sediment("inspect", db, "--id", "1")
    assert one.code == 0 and "sources:" in one.out and "README.md:1" in one.out
    assert sediment("inspect", db, "--id", "999999").code == 1
    assert sediment("validate", db).code == 0
    data = bytearray((root / "AGENTS.db").read_bytes())
    struct.pack_into("<Q", data, 8, len(data) + 5)
    (root / "bad.db").write_bytes(bytes(data))
    r = sediment("validate", db, str(root / "bad.db"), "--json")
    assert r.code == 1
    report = r.json()
    assert report[0]["valid"] and not report[1]["valid"]
    assert report[1]["violations"][0]["field"] == "file_length_bytes"


def test_layers_command(sediment: Runner, tmp_path: Path) -> None:
    root = make_docs(tmp_path / "repo")
    compile_docs(sediment, root)
    r = sediment("layers", "--dir", str(root), "--json")
    assert r.code == 0
    rows = {x["layer"]: x for x in r.json()["layers"]}
    assert rows["base"]["present"] and not rows["local"]["present"]
    assert sediment("layers", "--dir", str(root)).code == 0


@pytest.mark.parametrize("args,message", [
    (("inspect", "missing.db"), "no such layer file"),
    (("write", "--kind", "note", "--content", "x", "--confidence", "7"), "confidence"),
    (("write", "--kind", "meta.x", "--content", "x", "--confidence", "0.5"), "reserved"),
    (("write", "--kind", "note", "--content", "x", "--confidence", "0.5", "--source",
      "nofile"), "path:line"),
    (("search", "x", "--embedder", "nope"), "nope"),
    (("search", "x", "--query-vec", "[1, 2"), "not JSON"),
    (("compile", "--include", "/etc/*"), "include"),
    (("compile", "--root", "does-not-exist"), "does-not-exist"),
])
def test_user_errors_are_one_line_exit_1(sediment: Runner, args: tuple[str, ...],
                                         message: str) -> None:
    r = sediment(*args)
    assert r.code == 1, (r.out, r.err)
    assert r.err.startswith("Error: ") and message in r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize("args", [("write", "--scope", "base", "--kind", "k", "--content", "c",
                                   "--confidence", "1"), ("search",), ("nosuchcommand",)])
def test_usage_errors_exit_2(sediment: Runner, args: tuple[str, ...]) -> None:
    r = sediment(*args)
    assert r.code == 2 and "Traceback" not in r.err


def test_format_error_is_user_error(sediment: Runner, tmp_path: Path) -> None:
    (tmp_path / "AGENTS.db").write_bytes(b"not a layer file at all, definitely not" * 2)
    r = sediment("search", "x", "--dir", str(tmp_path))
    assert r.code == 1 and "bad magic" in r.err and str(tmp_path / "AGENTS.db") in r.err


@pytest.mark.parametrize("command", ["compile", "search", "inspect", "validate", "write",
                                     "layers"])
def test_every_command_has_help_and_json(sediment: Runner, command: str) -> None:
    r = sediment(command, "--help")
    assert r.code == 0 and "--json" in r.out


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    """On a terminal, compile draws a progress bar on stderr; piped, it prints none."""
    import os
    import pty
    import subprocess

    from tests.cli.conftest import SEDIMENT

    root = make_docs(tmp_path / "repo")
    master, slave = pty.openpty()
    env = {**os.environ, "SEDIMENT_EMBEDDER": "hash", "COLUMNS": "120"}
    proc = subprocess.Popen([zygote.script(str(SEDIMENT)),
                             "compile", "--root", str(root), "--include",
                             "**/*.md", "--out", str(root / "AGENTS.db")],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                            env=env)
    os.close(slave)
    out, _ = proc.communicate(timeout=120)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    drawn = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0
    assert "embedding" in drawn or "reading" in drawn, drawn
    assert b"compiled" in out

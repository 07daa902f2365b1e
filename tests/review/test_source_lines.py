"""Which ``path:line`` sources a reviewer is shown (issue 26, item 2): only files the
project compiles, never dotfiles or Sediment's own files, a bounded read, cached."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.ingest import discover, selector
from sediment.review import SourceLines, inspect_chunk
from sediment.store import LayerSet
from tests.review.helpers import agent_write, make_base

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\nUse the staging database.\n")
    (tmp_path / "docs" / "notes.txt").write_text("not compiled\n")
    (tmp_path / ".env").write_text(SECRET + "\n")
    (tmp_path / ".sediment" / "context").mkdir(parents=True)
    (tmp_path / ".sediment" / "context" / "AGENTS.context.db").write_bytes(b"AGDB\x00raw")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    make_base(tmp_path)
    return tmp_path


def md_only(root: Path) -> SourceLines:
    return SourceLines(root, selector(["**/*.md", "AGENTS*.db", ".env"]))


@pytest.mark.parametrize(("ref", "note"), [
    (".env:1", "hidden"),
    ("docs/../.env:1", "hidden"),
    (".sediment/context/AGENTS.context.db:1", "hidden"),
    ("AGENTS.db:1", "Sediment's own files"),
    ("AGENTS.local.db:1", "Sediment's own files"),
    ("docs/notes.txt:1", "not a file this project compiles"),
    ("src/app.py:1", "not a file this project compiles"),
    ("../outside.md:1", "outside the root"),
])
def test_files_a_compile_would_not_read_are_never_shown(repo: Path, ref: str,
                                                        note: str) -> None:
    (repo / "AGENTS.local.db").write_bytes(b"AGDB other actors' memories")
    got = md_only(repo).read(ref)
    assert not got.found and got.text is None and note in got.note, got


def test_a_compiled_file_is_shown(repo: Path) -> None:
    got = md_only(repo).read("docs/guide.md:2")
    assert got.found and got.text == "Use the staging database."


def test_a_symlink_cannot_lead_past_the_rules(repo: Path) -> None:
    os.symlink(repo / ".env", repo / "docs" / "env.md")
    got = md_only(repo).read("docs/env.md:1")
    assert not got.found and "hidden" in got.note


def test_the_globs_rule_out_what_the_project_excludes(repo: Path) -> None:
    (repo / "docs" / "drafts").mkdir()
    (repo / "docs" / "drafts" / "x.md").write_text("draft\n")
    lines = SourceLines(repo, selector(["docs/**/*.md"], ["docs/drafts"]))
    assert lines.read("docs/guide.md:1").found
    assert "not a file this project compiles" in lines.read("docs/drafts/x.md:1").note


def test_a_line_that_looks_like_a_credential_is_not_shown(repo: Path) -> None:
    (repo / "docs" / "ops.md").write_text(f"# Ops\n{SECRET}\n")
    got = md_only(repo).read("docs/ops.md:2")
    assert not got.found and got.text is None and "credential" in got.note


def test_reads_are_bounded_and_each_file_version_is_read_once(repo: Path) -> None:
    big = repo / "docs" / "big.md"
    big.write_text("".join(f"line {i}\n" for i in range(1, 200_001)))  # ~1.9 MB
    lines = SourceLines(repo, selector(["**/*.md"]), max_bytes=100_000)
    for _ in range(3):
        for n in range(1, 65):
            assert lines.read(f"docs/big.md:{n * 100}").text == f"line {n * 100}"
    assert lines.reads == 1
    past = lines.read("docs/big.md:150000")
    assert not past.found and "past the first 100000 bytes" in past.note
    assert lines.read("docs/big.md:100").text == "line 100"
    big.write_text("changed\n" * 100)
    assert lines.read("docs/big.md:100").text == "changed" and lines.reads == 2
    assert lines.read("docs/guide.md:2").text == "Use the staging database."
    (repo / "docs" / "guide.md").write_text(f"# Guide\n{SECRET}\n")
    assert not lines.read("docs/guide.md:2").found


def test_inspect_passes_its_sources_through_the_reader(repo: Path) -> None:
    ls = LayerSet.from_directory(repo)
    cid = agent_write(ls, "Where the secrets are.", sources=[".env:1", "docs/guide.md:1"])
    report = inspect_chunk(repo / "AGENTS.delta.db", cid, lines=md_only(repo))
    env, guide = report.sources
    assert env.text is None and "hidden" in env.note
    assert guide.text == "# Guide"
    assert SECRET not in str(report.to_dict())


SEGMENT = st.sampled_from(["docs", "a.md", "b.txt", ".hidden", "node_modules", "build",
                           "x", "drafts"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(SEGMENT, min_size=1, max_size=4), min_size=1, max_size=8))
def test_the_selector_agrees_with_discover(tmp_path_factory: pytest.TempPathFactory,
                                           paths: list[list[str]]) -> None:
    """For every tree, ``selector`` keeps exactly the files ``discover`` lists."""
    root = tmp_path_factory.mktemp("tree")
    files: set[str] = set()
    for parts in paths:
        rel = "/".join(parts)
        if any(rel.startswith(f + "/") for f in files) or \
                any(f.startswith(rel + "/") for f in files):
            continue
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
        files.add(rel)
    include, exclude = ["**/*.md", "docs/**"], ["**/drafts"]
    found = {p.as_posix() for p in discover(root, include, exclude)}
    selects = selector(include, exclude)
    assert {f for f in files if selects(f)} == found

"""The merge driver's file handling and installation, outside a git repository (the
driver then merges the one file it is given)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from sediment.format import Chunk, LayerFile, encode_layer
from sediment.ops.gitmerge import ATTRIBUTES, attributes_text, install, merge_file
from sediment.store.ids import WRITTEN_START
from sediment.store.merge import MergeConflict

W = WRITTEN_START


def layer(path: Path, *texts: str, first: int = W) -> Path:
    chunks = [Chunk(first + i, "note", t, "mcp", 0.5, 10 + i, ()) for i, t in enumerate(texts)]
    vectors = np.stack([np.random.default_rng(list(t.encode())).standard_normal(4)
                        for t in texts])
    md = {"v": 1, "id_high_water": first + len(texts) - 1}
    path.write_bytes(bytes(encode_layer(chunks, vectors, metadata=md)))
    return path


@pytest.fixture
def outside_git(tmp_path: Path) -> Path:
    probe = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=tmp_path,
                           capture_output=True, text=True, check=False)
    if probe.stdout.strip() == "true":
        pytest.skip("the temporary directory is inside a git work tree")
    return tmp_path


def test_merge_file_merges_one_file_and_writes_ours(outside_git: Path) -> None:
    d = outside_git
    o = layer(d / "O", "start")
    a = layer(d / "A", "start", "ours adds")
    b = layer(d / "B", "start", "theirs adds")
    result = merge_file(o, a, b, "AGENTS.delta.db", cwd=d)
    assert not result.whole_set and result.chunks == 3
    f = LayerFile.open(a)
    assert f.validate() == []
    got = {c.id: c.content for c in f.chunks()}
    assert sorted(got.values()) == ["ours adds", "start", "theirs adds"]
    assert len(result.renumbered) == 1 and W + 1 in result.renumbered
    assert (f.metadata or {})["id_high_water"] == max(got)


def test_a_conflict_leaves_ours_untouched(outside_git: Path) -> None:
    d = outside_git
    o = layer(d / "O", "start")
    a = layer(d / "A", "start", "ours adds")
    b = layer(d / "B", "changed start", "theirs adds")
    before = a.read_bytes()
    with pytest.raises(MergeConflict, match=r"chunk \d+ was changed in place on theirs"):
        merge_file(o, a, b, "AGENTS.delta.db", cwd=d)
    assert a.read_bytes() == before
    with pytest.raises(MergeConflict, match="recompile instead"):
        merge_file(o, a, b, "docs/AGENTS.db", cwd=d)
    (d / "bad").write_bytes(b"not a layer")
    with pytest.raises(MergeConflict, match=r"theirs AGENTS\.user\.db is not a valid layer"):
        merge_file(o, a, d / "bad", "AGENTS.user.db", cwd=d)
    assert a.read_bytes() == before


def test_install_writes_attributes_once_and_returns_the_config_outside_git(
        outside_git: Path) -> None:
    setup = install(outside_git)
    assert setup.attributes_changed and not setup.config_written
    assert dict(setup.config)["merge.sediment.driver"].endswith("merge-driver %O %A %B %P")
    text = (outside_git / ".gitattributes").read_text()
    assert text.splitlines() == ATTRIBUTES
    assert not install(outside_git).attributes_changed
    assert attributes_text("*.png binary") == "*.png binary\n" + "\n".join(ATTRIBUTES) + "\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: a delta layer; branch a: a user and a delta chunk; branch b (checked out): two
    delta chunks. Both branches took the same ids."""
    r = tmp_path / "repo"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _git(r, "config", "user.name", "T")
    _git(r, "config", "user.email", "t@example.com")
    layer(r / "AGENTS.delta.db", "start")
    _git(r, "add", "-A")
    _git(r, "commit", "-q", "-m", "start")
    _git(r, "checkout", "-q", "-b", "a")
    layer(r / "AGENTS.delta.db", "start", "a delta")
    layer(r / "AGENTS.user.db", "a user", first=W + 2)
    _git(r, "add", "-A")
    _git(r, "commit", "-q", "-m", "a")
    _git(r, "checkout", "-q", "-b", "b", "main")
    layer(r / "AGENTS.delta.db", "start", "b delta", "b more")
    _git(r, "add", "-A")
    _git(r, "commit", "-q", "-m", "b")
    return r


def _versions(repo: Path, tmp: Path, ancestor: str, theirs: str) -> tuple[Path, Path, Path]:
    out = []
    for label, rev in (("O", ancestor), ("A", "HEAD"), ("B", theirs)):
        p = tmp / label
        p.write_bytes(subprocess.run(["git", "cat-file", "blob", f"{rev}:AGENTS.delta.db"],
                                     cwd=repo, capture_output=True, check=True).stdout)
        out.append(p)
    return out[0], out[1], out[2]


def test_a_cherry_picked_commit_is_found_and_the_whole_set_renumbered(
        repo: Path, tmp_path: Path) -> None:
    o, a, b = _versions(repo, tmp_path, "a^", "a")
    result = merge_file(o, a, b, "AGENTS.delta.db", cwd=repo)
    assert result.whole_set
    # b's delta chunks W+1 and W+2 collide with a's delta chunk and a's *user* chunk; a's
    # user file is taken by git as it is (b did not change it), so b's ids move, both.
    assert result.renumbered == {W + 1: W + 3, W + 2: W + 4}
    got = {c.id: c.content for c in LayerFile.open(a).chunks()}
    assert got == {W: "start", W + 1: "a delta", W + 3: "b delta", W + 4: "b more"}


def test_without_the_commits_inside_a_repository_renumbering_is_refused(
        repo: Path, tmp_path: Path) -> None:
    o, a, b = _versions(repo, tmp_path, "a^", "a")
    b.write_bytes(layer(tmp_path / "elsewhere", "start", "not in any commit").read_bytes())
    before = a.read_bytes()
    with pytest.raises(MergeConflict, match="commits being merged were not found"):
        merge_file(o, a, b, "AGENTS.delta.db", cwd=repo)
    assert a.read_bytes() == before

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

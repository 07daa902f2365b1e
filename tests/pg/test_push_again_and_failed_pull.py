"""``sediment push`` of a directory the project already holds adds only what is new (the
base included, when it is the same base), and a ``sediment pull`` that fails leaves the
target directory as it was: every file is built beside its target first and put in place
only once all of them are built."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sediment.format import Chunk, LayerFile, encode_layer
from tests.conftest import Runner
from tests.pg.layers import DIM, build_layers

HASH64 = {"SEDIMENT_EMBED_DIM": str(DIM)}


def _listing(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() if p.is_file() else b""
            for p in sorted(directory.rglob("*"))}


def test_pushing_an_unchanged_directory_again_adds_nothing(sediment: Runner, pg_url: str,
                                                           tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    build_layers(src)
    first = sediment("push", "--store", pg_url, "--dir", str(src), "--json")
    assert first.code == 0, first.err
    again = sediment("push", "--store", pg_url, "--dir", str(src), "--json")
    assert again.code == 0, again.err
    done = json.loads(again.out)
    assert done["layers"] == {"base": 0, "delta": 0, "user": 0, "local": 0}
    assert done["skipped"] == {"base": 8, "delta": 1, "user": 1, "local": 1}
    text = sediment("push", "--store", pg_url, "--dir", str(src))
    assert text.code == 0 and "base   0 chunks pushed, 8 already there" in text.out


def test_a_different_base_is_still_refused_and_nothing_is_written(
        sediment: Runner, pg_url: str, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    build_layers(src)
    assert sediment("push", "--store", pg_url, "--dir", str(src)).code == 0
    f = LayerFile.open(src / "AGENTS.db")
    chunks = [*f.chunks(), Chunk(9, "canonical", "One more compiled chunk.", "human", 1.0,
                                 9, ())]
    vectors = np.vstack([np.stack([f.vector(i) for i in range(f.chunk_count)]),
                         np.full((1, DIM), DIM ** -0.5, dtype=np.float32)])
    data = encode_layer(chunks, vectors, dim=DIM, metadata=dict(f.metadata or {}))
    del f
    (src / "AGENTS.db").write_bytes(data)
    assert sediment("write", "--dir", str(src), "--kind", "note", "--confidence",
                    "0.5", "--content", "A new local note.", env=HASH64).code == 0
    refused = sediment("push", "--store", pg_url, "--dir", str(src))
    assert refused.code == 1 and "--replace-base" in refused.err, refused.err
    out = tmp_path / "out"
    out.mkdir()
    assert sediment("pull", "--store", pg_url, "--dir", str(out)).code == 0
    assert LayerFile.open(out / "AGENTS.db").chunk_count == 8
    assert LayerFile.open(out / "AGENTS.local.db").chunk_count == 1  # nothing was written


def test_a_failed_pull_leaves_the_directory_as_it_was(sediment: Runner, pg_url: str,
                                                      tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    build_layers(src)
    assert sediment("push", "--store", pg_url, "--dir", str(src)).code == 0
    out = tmp_path / "out"
    out.mkdir()
    made = sediment("context", "store", "A context item already here.", "--type", "task",
                    "--dir", str(out), env={**HASH64, "SEDIMENT_ACTOR": "alice"})
    assert made.code == 0, made.err
    before = _listing(out)
    failed = sediment("pull", "--store", pg_url, "--dir", str(out), "--context",
                      "--actor", "alice")
    assert failed.code == 1 and "--force" in failed.err, failed.err
    assert _listing(out) == before
    assert not list(out.glob("AGENTS*.db"))


def test_a_pull_refused_for_own_memories_writes_no_layer(sediment: Runner, pg_url: str,
                                                         tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    build_layers(src)
    assert sediment("push", "--store", pg_url, "--dir", str(src)).code == 0
    alice = {**HASH64, "SEDIMENT_ACTOR": "alice"}
    assert sediment("memory", "save", "Alice prefers short answers.", "--category",
                    "preference", "--store", pg_url, env=alice).code == 0, "save on server"
    assert sediment("memory", "save", "Alice's local preference.", "--category",
                    "preference", "--dir", str(src), env=alice).code == 0, "save on files"
    out = tmp_path / "out"
    out.mkdir()
    failed = sediment("pull", "--store", pg_url, "--dir", str(out), "--user-memories",
                      "--actor", "alice")
    assert failed.code == 1 and "--force" in failed.err, failed.err
    assert not list(out.iterdir())

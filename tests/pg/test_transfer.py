"""push and pull: files -> server -> files keeps chunks, events and vectors; the id
sequence moves past pushed ids; a push into a project only adds; the base is replaced only
on request; the pulled files validate and search as the server does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sediment.errors import NotFoundError, PermissionDeniedError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.ops.forget import forget
from sediment.pg import PgStore, pull, push
from sediment.review.decisions import promote
from sediment.store import FILE_NAMES, LayerName, LayerSet, NewChunk
from sediment.store.ids import WRITTEN_START
from tests.conftest import Runner
from tests.pg.layers import DIM, EMBEDDER, build_layers

HASH64 = {"SEDIMENT_EMBED_DIM": str(DIM)}


def _files(directory: Path) -> dict[str, tuple[list[Chunk], np.ndarray, str, object]]:
    out = {}
    for name in LayerName:
        path = directory / name.file_name
        if path.exists():
            f = LayerFile.open(path)
            vecs = (np.stack([f.vector(i) for i in range(f.chunk_count)]) if f.chunk_count
                    else np.zeros((0, f.dim)))
            out[name.value] = (list(f.chunks()), vecs, f.element_type,
                               f.embedding_profile)
    return out


@pytest.mark.parametrize("element_type", ["f32", "i8"])
def test_round_trip_keeps_chunks_events_and_vectors(pg_url: str, tmp_path: Path,
                                                    element_type: str) -> None:
    (tmp_path / "src").mkdir()
    src = build_layers(tmp_path / "src", element_type)
    ls = LayerSet.from_directory(src)
    promote(ls, [3], reason="ok")  # events (a decision) and a copy in user
    forget(ls, 5, "outdated")
    with PgStore(pg_url) as store:
        done = push(store, LayerSet.from_directory(src))
        assert done.layers == {"local": 1, "user": 3, "delta": 2, "base": 8}
        back = tmp_path / "back"
        back.mkdir()
        pulled = pull(store, back)
    assert sorted(Path(p).name for p in pulled.files) == sorted(FILE_NAMES.values())
    before, after = _files(src), _files(back)
    assert before.keys() == after.keys()
    for layer in before:
        chunks_a, vecs_a, etype_a, prof_a = before[layer]
        chunks_b, vecs_b, etype_b, prof_b = after[layer]
        assert chunks_a == chunks_b, layer
        assert np.array_equal(vecs_a, vecs_b), layer
        assert (etype_a, prof_a) == (etype_b, prof_b)
    assert [e.data for e in LayerSet.from_directory(back).events()] == \
        [e.data for e in ls.events()]


def test_the_sequence_moves_past_pushed_ids(pg_url: str, tmp_path: Path) -> None:
    src = build_layers(tmp_path)
    top = LayerSet.from_directory(src).high_water()
    assert top >= WRITTEN_START + 7
    with PgStore(pg_url) as store:
        push(store, LayerSet.from_directory(src))
        new = store.append(LayerName.LOCAL, [NewChunk("note", "after push", "mcp", 1.0)],
                           EMBEDDER.embed(["after push"]), profile=EMBEDDER.profile.to_dict())
        assert new[0] > top


def test_pushing_again_adds_only_new_ids(pg_url: str, tmp_path: Path) -> None:
    src = build_layers(tmp_path)
    with PgStore(pg_url) as store:
        push(store, LayerSet.from_directory(src))
        ls = LayerSet.from_directory(src)
        new = ls.append(LayerName.LOCAL, [NewChunk("note", "one more", "mcp", 1.0)],
                        EMBEDDER.embed(["one more"]), profile=EMBEDDER.profile.to_dict())
        (src / "AGENTS.db").rename(tmp_path / "base.db")  # the base is not pushed again
        again = push(store, LayerSet.from_directory(src))
        assert again.layers == {"local": 1, "user": 0, "delta": 0}
        assert again.skipped == {"local": 1, "user": 1, "delta": 1}
        assert store.chunk(LayerName.LOCAL, new[0]) is not None


def test_a_different_chunk_under_a_used_id_is_refused(pg_url: str, tmp_path: Path) -> None:
    src = build_layers(tmp_path)
    with PgStore(pg_url) as store:
        push(store, LayerSet.from_directory(src))
        other = tmp_path / "other"
        other.mkdir()
        (other / "AGENTS.delta.db").write_bytes(encode_layer(
            [Chunk(3, "note", "something else entirely", "mcp", 0.5, 1, ())],
            EMBEDDER.embed(["something else entirely"]), dim=DIM,
            metadata={"v": 1, "embedding_profile": EMBEDDER.profile.to_dict()}))
        with pytest.raises(PermissionDeniedError, match="only add new ids"):
            push(store, LayerSet.from_directory(other))
        assert store.chunk(LayerName.DELTA, 3).content.startswith("Agents write")  # type: ignore[union-attr]


def test_the_base_is_replaced_only_on_request(pg_url: str, tmp_path: Path) -> None:
    src = build_layers(tmp_path)
    with PgStore(pg_url) as store:
        push(store, LayerSet.from_directory(src))
        newer = tmp_path / "newer"
        newer.mkdir()
        (newer / "AGENTS.db").write_bytes(encode_layer(
            [Chunk(1, "canonical", "A recompiled base.", "human", 1.0, 1, ())],
            EMBEDDER.embed(["A recompiled base."]), dim=DIM,
            metadata={"v": 1, "embedding_profile": EMBEDDER.profile.to_dict()}))
        with pytest.raises(PermissionDeniedError, match="reviewer"):
            push(store, LayerSet.from_directory(newer))
        push(store, LayerSet.from_directory(newer), replace_base=True)
        summary = store.summary(LayerName.BASE)
        assert summary is not None and summary.chunks == 1
        assert store.chunk(LayerName.BASE, 1).content == "A recompiled base."  # type: ignore[union-attr]
        with store.cursor() as cur:  # BM25 statistics follow the replacement
            cur.execute("SELECT n_docs FROM layers WHERE project = 'default' AND "
                        "layer = 'base'")
            assert cur.fetchone() == (1,)


def test_pull_refuses_to_overwrite_and_an_empty_project(pg_url: str, tmp_path: Path) -> None:
    with PgStore(pg_url) as store:
        with pytest.raises(NotFoundError, match="no layers"):
            pull(store, tmp_path)
        push(store, LayerSet.from_directory(build_layers(tmp_path)))
        with pytest.raises(PermissionDeniedError, match="--force"):
            pull(store, tmp_path)
        assert pull(store, tmp_path, force=True).layers["base"] == 8


def test_push_and_pull_commands(sediment: Runner, pg_url: str, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    build_layers(src)
    pushed = sediment("push", "--store", pg_url, "--dir", str(src), "--json")
    assert pushed.code == 0, pushed.err
    assert pushed.json()["layers"]["base"] == 8
    again = sediment("push", "--store", pg_url, "--dir", str(src), "--json")
    assert again.code == 0 and again.json()["skipped"]["base"] == 8, again.err
    out = tmp_path / "out"
    out.mkdir()
    pulled = sediment("pull", "--store", pg_url, "--dir", str(out))
    assert pulled.code == 0, pulled.err
    valid = sediment("validate", *sorted(str(p) for p in out.glob("*.db")))
    assert valid.code == 0, valid.out + valid.err
    for query in ("layers precedence", "agents write notes", "BM25 tuning"):
        a = sediment("search", "--dir", str(out), query, "--json", env=HASH64).json()["results"]
        b = sediment("search", "--store", pg_url, query, "--json", env=HASH64).json()["results"]
        assert a
        assert [(h["id"], h["layer"]) for h in a] == [(h["id"], h["layer"]) for h in b]

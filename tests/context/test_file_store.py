"""The context store's files: i8 vectors for unit-vector embedders, one shared zero row for
its events, and both kept through an archive compaction."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sediment.context import FileContextStore, NewEvent, NewItem
from sediment.context.state import ITEM_EVENT
from sediment.embed import HashEmbedder
from sediment.format import LayerFile, encode_layer
from sediment.format.model import Chunk
from sediment.store import LayerName, LayerSet
from sediment.store.commit import New
from sediment.store.ids import CONTEXT_IDS, WRITTEN_START


def _store(root: Path) -> FileContextStore:
    emb = HashEmbedder()
    return FileContextStore(root / "context", profile=emb.profile.to_dict(),
                            dim=emb.profile.dim)


def _add(store: FileContextStore, texts: list[str]) -> tuple[list[int], np.ndarray]:
    vecs = np.asarray(HashEmbedder().embed(texts), dtype=np.float32)
    items = [NewItem("context.task", t, "mcp", v) for t, v in zip(texts, vecs, strict=True)]
    events = [NewEvent(ITEM_EVENT, {"event": "store", "item": New(k)}, (New(k),))
              for k in range(len(texts))]
    return store.append(items, events), vecs


def test_a_new_store_writes_i8_with_one_zero_row_for_its_events(tmp_path: Path) -> None:
    store = _store(tmp_path)
    ids, vecs = _add(store, ["first note about the cache", "second note about CI"])
    ids2, vecs2 = _add(store, ["third note about the login form"])
    f = LayerFile.open(store.active_path)
    assert f.validate() == []
    assert f.element_type == "i8" and f.quant_scale == np.float32(1 / 127)
    assert (f.chunk_count, f.embedding_info.rows) == (6, 4)  # three items, one zero row
    got = {i.chunk.id: i.vector for i in store.items()}
    for cid, v in zip(ids + ids2, np.concatenate([vecs, vecs2]), strict=True):
        assert np.abs(got[cid] - v).max() <= 0.5 / 127 + 1e-6


def test_archiving_keeps_i8_and_the_shared_row_and_archived_items_are_read(
        tmp_path: Path) -> None:
    store = _store(tmp_path)
    ids, _ = _add(store, [f"note {i} about topic {i}" for i in range(5)])
    before = {i.chunk.id: i.vector for i in store.items()}
    assert store.archive(ids[:3], "2026-01-01") == 3
    archive = LayerFile.open(tmp_path / "context" / "archive" / "AGENTS.archive-2026-01-01.db")
    active = LayerFile.open(store.active_path)
    for f, items in ((archive, 3), (active, 2)):
        assert f.validate() == []
        assert f.element_type == "i8"
        assert (f.chunk_count, f.embedding_info.rows) == (2 * items, items + 1)
    after = {i.chunk.id: i for i in store.items(archived=True)}
    assert sorted(after) == sorted(ids)
    assert all(after[c].archived for c in ids[:3]) and not any(after[c].archived
                                                               for c in ids[3:])
    for cid in ids:
        assert np.array_equal(after[cid].vector, before[cid])


def test_a_store_that_exists_in_f32_stays_f32(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.directory.mkdir(parents=True)
    dim = HashEmbedder().profile.dim
    v = np.zeros((1, dim), dtype=np.float32)
    v[0, 0] = 1.0
    store.active_path.write_bytes(encode_layer(
        [Chunk(2**31, "context.task", "an old item", "mcp", 1.0, 0)], v,
        metadata={"v": 1, "embedding_profile": store.profile}))
    _add(store, ["a new note"])
    f = LayerFile.open(store.active_path)
    assert f.element_type == "f32" and f.chunk_count == 3 and f.embedding_info.rows == 3


def test_ids_come_from_the_context_range_and_an_archive_keeps_them_taken(
        tmp_path: Path) -> None:
    """A context store numbers from ``CONTEXT_IDS``, never an id of the project's layers or
    of an actor's memories; ids that moved to an archive are never given again."""
    store = _store(tmp_path)
    ids, _ = _add(store, ["first note about the cache", "second note about CI"])
    assert ids == [CONTEXT_IDS.first, CONTEXT_IDS.first + 1]
    store.archive(ids, "2026-01-01")
    later, _ = _add(store, ["third note about the login form"])
    assert later == [CONTEXT_IDS.first + 4]  # after the two items and their two events


def test_a_store_from_before_the_ranges_reads_and_grows_in_the_context_range(
        tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.layers = LayerSet({LayerName.LOCAL: store.active_path})  # the project's range
    old, _ = _add(store, ["an item written by an older version"])
    assert old == [WRITTEN_START]
    store = _store(tmp_path)
    new, _ = _add(store, ["an item written now"])
    assert new == [CONTEXT_IDS.first]
    assert {i.chunk.id: i.chunk.content for i in store.items()} == {
        WRITTEN_START: "an item written by an older version",
        CONTEXT_IDS.first: "an item written now"}

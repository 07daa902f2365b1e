"""A push keeps the files' ids, so it checks them against every table of the project: one
id names one row, whichever of ``chunks`` and ``memories`` holds it, and a written id that
another layer gives other content is a different chunk, not a version of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment.errors import PermissionDeniedError
from sediment.format import Chunk, encode_layer
from sediment.pg import PgStore, push
from sediment.store import LayerName, LayerSet
from sediment.store.ids import WRITTEN_START
from tests.pg.layers import DIM, EMBEDDER, build_layers

NOTE = WRITTEN_START + 7
"""The local note ``build_layers`` writes."""
NOTE_TEXT = "A local note about BM25 tuning: k1 0.9, b 0.4."


def _dir(root: Path, name: str, layer: LayerName, *chunks: Chunk) -> LayerSet:
    directory = root / name
    directory.mkdir()
    (directory / layer.file_name).write_bytes(encode_layer(
        list(chunks), EMBEDDER.embed([c.content for c in chunks]), dim=DIM,
        metadata={"v": 1, "embedding_profile": EMBEDDER.profile.to_dict()}))
    return LayerSet.from_directory(directory)


def test_a_written_id_with_other_content_in_another_layer_is_refused(
        pg_url: str, tmp_path: Path) -> None:
    with PgStore(pg_url) as store:
        push(store, LayerSet.from_directory(build_layers(tmp_path)))
        other = _dir(tmp_path, "other", LayerName.USER,
                     Chunk(NOTE, "note", "Something else entirely.", "mcp", 0.5, 1, ()))
        with pytest.raises(PermissionDeniedError, match=f"already uses ids {NOTE} for other"):
            push(store, other)
        copy = _dir(tmp_path, "copy", LayerName.USER,
                    Chunk(NOTE, "note", NOTE_TEXT, "mcp", 0.5, 1, ()))
        assert push(store, copy).layers == {"user": 1}  # a copy (a promotion) is a version
        assert store.chunk(LayerName.USER, NOTE) is not None


def test_a_memory_row_and_a_chunk_never_share_an_id(pg_url: str, tmp_path: Path) -> None:
    with PgStore(pg_url) as store:
        push(store, LayerSet.from_directory(build_layers(tmp_path)))
        memory = _dir(tmp_path, "memory", LayerName.LOCAL,
                      Chunk(NOTE, "memory.fact.alice", NOTE_TEXT, "mcp", 1.0, 1, ()))
        with pytest.raises(PermissionDeniedError, match=f"under the memory ids {NOTE};"):
            push(store, memory)
        saved = _dir(tmp_path, "saved", LayerName.LOCAL,
                     Chunk(NOTE + 1, "memory.fact.alice", "Alice deploys on Fridays.", "mcp",
                           1.0, 1, ()))
        assert push(store, saved).memories == {"project": 1}
        note = _dir(tmp_path, "note", LayerName.LOCAL,
                    Chunk(NOTE + 1, "note", "Alice deploys on Fridays.", "mcp", 1.0, 1, ()))
        with pytest.raises(PermissionDeniedError, match=f"already uses ids {NOTE + 1} for"):
            push(store, note)

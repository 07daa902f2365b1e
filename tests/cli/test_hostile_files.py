"""Hostile layer files through the real ``sediment`` command: one-line errors, never exit 70."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from sediment.embed import HashEmbedder
from sediment.format import Chunk, encode_layer
from tests.cli.conftest import Runner
from tests.format.test_metadata import HOSTILE, with_metadata_blob


@pytest.mark.parametrize("name", ["50,000 open brackets", "5,000-digit integer"])
def test_hostile_metadata_in_validate_inspect_and_search(sediment: Runner, tmp_path: Path,
                                                         name: str) -> None:
    (tmp_path / "AGENTS.db").write_bytes(with_metadata_blob(HOSTILE[name]))
    r = sediment("validate", "AGENTS.db")
    assert r.code == 1 and "INVALID" in r.out and "[8.4.8] blob" in r.out, (r.out, r.err)
    for args in (("inspect", "AGENTS.db"), ("search", "hello", "--dir", ".")):
        r = sediment(*args)
        assert r.code == 1, (args, r.out, r.err[-400:])
        assert r.err.startswith("Error: ") and "layer metadata blob" in r.err
        assert "Traceback" not in r.err and len(r.err) < 500


def test_validate_names_rule_field_and_offset_of_chunk_id_zero(sediment: Runner,
                                                               tmp_path: Path) -> None:
    data = bytearray(with_metadata_blob(b'{"v":1}'))
    count, table = struct.unpack_from("<QQ", data, 16)
    for i in range(count):
        kind, _r, off, _len = struct.unpack_from("<IIQQ", data, table + 24 * i)
        if kind == 2:
            records = struct.unpack_from("<Q", data, off + 8)[0]
            struct.pack_into("<I", data, records, 0)
    (tmp_path / "zero.db").write_bytes(bytes(data))
    r = sediment("validate", "zero.db", "--json")
    assert r.code == 1
    [report] = r.json()
    assert report["violations"] == [{"rule": "8.4.2", "field": "ChunkRecord.id",
                                     "offset": records,
                                     "message": "chunk record 0 has id 0, which means unset; "
                                                "chunk ids run from 1 to 4294967295"}]


def test_an_event_chunk_of_deeply_nested_json_is_ignored(sediment: Runner,
                                                         tmp_path: Path) -> None:
    """Event contents are folded on every search; a hostile one is not an event."""
    emb = HashEmbedder()
    chunks = [Chunk(1, "note", "hello world", "human", 1.0, 0),
              Chunk(2, "meta.proposal_event", "[" * 50_000, "mcp", 1.0, 0, (1,))]
    (tmp_path / "AGENTS.db").write_bytes(encode_layer(
        chunks, np.asarray(emb.embed([c.content for c in chunks])),
        metadata={"v": 1, "embedding_profile": emb.profile.to_dict()}))
    r = sediment("search", "hello", "--dir", ".", "--json")
    assert r.code == 0, r.err[-400:]
    assert [hit["id"] for hit in r.json()["results"]] == [1]

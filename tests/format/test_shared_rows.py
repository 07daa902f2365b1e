"""Chunks without a vector of their own (events) share one zero row of the matrix."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.errors import ValidationError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.format import layout as L
from sediment.format.writer import zero_row
from tests.format.appending import appended
from tests.format.test_codec import sections

DIM = 4


def _chunks(flags: list[bool], start: int = 1) -> list[Chunk]:
    return [Chunk(start + i, "meta.event" if f else "note", f"text {start + i}", "mcp", 1.0,
                  1_700_000_000_000 + i, ((start,) if f else ())) for i, f in enumerate(flags)]


def _matrix(flags: list[bool], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.uniform(0.1, 1.0, (len(flags), DIM)).astype(np.float32)
    m[np.asarray(flags, dtype=bool)] = 0.0
    return m


def _rfc_rows(data: bytes) -> tuple[int, list[int], bytes]:
    """Row count, each chunk's embedding_row and the matrix bytes, read with ``struct``
    from the RFC's layout alone (no Sediment reader)."""
    sec = sections(data)
    _e, em, _n = sec[L.SECTION_EMBEDDING_MATRIX]
    rows, dim, _etype, off, length = struct.unpack_from("<QIIQQ", data, em)
    _e, ct, _n = sec[L.SECTION_CHUNK_TABLE]
    count, records = struct.unpack_from("<QQ", data, ct)
    row_of = [struct.unpack_from("<I", data, records + 52 * i + 28)[0] for i in range(count)]
    assert dim == DIM
    return rows, row_of, data[off:off + length]


def test_vectorless_chunks_share_one_zero_row_and_the_file_stays_valid() -> None:
    flags = [False, True, True, False, True]
    data = bytes(encode_layer(_chunks(flags), _matrix(flags), vectorless=flags))
    rows, row_of, matrix = _rfc_rows(data)
    assert rows == 3  # two notes and one shared zero row
    assert row_of == [1, 2, 2, 3, 2]
    assert all(1 <= r <= rows for r in row_of)
    assert matrix[4 * DIM:8 * DIM] == bytes(4 * DIM)
    f = LayerFile.from_bytes(data)
    assert f.validate() == []
    want = _matrix(flags)
    for i in range(len(flags)):
        assert np.array_equal(f.vector(i), want[i])


def test_a_vectorless_chunk_with_a_vector_is_refused() -> None:
    flags = [False, True]
    m = _matrix(flags)
    m[1, 0] = 0.5
    with pytest.raises(ValidationError, match="vectorless"):
        encode_layer(_chunks(flags), m, vectorless=flags)


def test_an_append_reuses_the_files_zero_row() -> None:
    base = LayerFile.from_bytes(encode_layer(_chunks([False, True]), _matrix([False, True]),
                                             vectorless=[False, True]))
    assert zero_row(base) == 2
    flags = [True, False, True]
    out = LayerFile.from_bytes(appended(base, _chunks(flags, 10), _matrix(flags, 1),
                                             metadata=None, vectorless=flags))
    assert out.embedding_info.rows == 3  # only the new note added a row
    assert out.records["embedding_row"].tolist() == [1, 2, 2, 3, 2]
    assert out.validate() == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=30), st.data(),
       st.sampled_from(["f32", "i8"]))
def test_appends_give_the_bytes_of_one_full_encode(flags: list[bool], data: st.DataObject,
                                                    etype: str) -> None:
    """Appending the tail of a layer to its head writes the bytes the whole layer encodes
    to: an append encodes only its new chunks, and finds the head's zero row."""
    cut = data.draw(st.integers(0, len(flags) - 1))
    chunks, matrix = _chunks(flags), _matrix(flags)
    scale = 1.0 / 127.0 if etype == "i8" else None
    whole = bytes(encode_layer(chunks, matrix, dim=DIM, element_type=etype, quant_scale=scale,
                               vectorless=flags))
    head = LayerFile.from_bytes(encode_layer(chunks[:cut], matrix[:cut], dim=DIM,
                                             element_type=etype, quant_scale=scale,
                                             vectorless=flags[:cut]))
    out_bytes = bytes(appended(head, chunks[cut:], matrix[cut:], metadata=None,
                                   vectorless=flags[cut:]))
    assert out_bytes == whole

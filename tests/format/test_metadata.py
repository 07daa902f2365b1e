"""The layer metadata blob is decoded within bounds: hostile JSON is a FormatError."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.errors import FormatError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.format import layout as L
from sediment.format.metadata import MAX_DEPTH, MAX_NUMBER_CHARS


def with_metadata_blob(raw: bytes) -> bytes:
    """A valid layer file whose metadata blob is ``raw`` (padded with JSON whitespace)."""
    chunks = [Chunk(1, "note", "hello", "human", 1.0, 0)]
    data = bytearray(encode_layer(chunks, np.ones((1, 4), np.float32),
                                  metadata={"pad": "x" * len(raw)}))
    count, table = struct.unpack_from("<QQ", data, 16)
    for i in range(count):
        kind, _r, off, length = struct.unpack_from("<IIQQ", data, table + 24 * i)
        if kind == L.SECTION_LAYER_METADATA:
            data[off + 24:off + length] = raw.ljust(length - 24)
            return bytes(data)
    raise AssertionError("no metadata section")


def nested(depth: int) -> bytes:
    return b'{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


HOSTILE = {
    "50,000 open brackets": b"[" * 50_000,
    "50,000 nested objects": b'{"a":' * 50_000,
    "deep but closed": b"[" * 5_000 + b"]" * 5_000,
    "5,000-digit integer": b'{"n":' + b"9" * 5_000 + b"}",
    "5,000-digit negative": b'{"n":-' + b"9" * 5_000 + b"}",
    "5,000-digit float": b'{"n":0.' + b"1" * 5_000 + b"}",
    "float past a double": b'{"n":1e999}',
    "NaN": b'{"n":NaN}',
    "Infinity": b'{"n":-Infinity}',
    "one level too deep": nested(MAX_DEPTH + 1),
    "not an object": b"[1,2]",
    "not UTF-8": b'{"a":"\xff"}',
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_metadata_is_a_format_error_naming_the_section(name: str) -> None:
    f = LayerFile.from_bytes(with_metadata_blob(HOSTILE[name]), path="bad.db")
    with pytest.raises(FormatError) as exc:
        _ = f.metadata
    assert exc.value.rule == "8.4.8" and exc.value.field == "blob"
    assert "layer metadata blob" in str(exc.value) and len(str(exc.value)) < 300
    with pytest.raises(FormatError):
        _ = f.embedding_profile
    assert [e.field for e in f.validate()] == ["blob"]


def test_the_bounds_themselves_are_accepted() -> None:
    number = "7" * MAX_NUMBER_CHARS
    f = LayerFile.from_bytes(with_metadata_blob(nested(MAX_DEPTH)))
    assert f.validate() == [] and f.metadata is not None
    f = LayerFile.from_bytes(with_metadata_blob(f'{{"n":{number},"x":-1.5e300}}'.encode()))
    assert f.metadata == {"n": int(number), "x": -1.5e300}


def test_number_error_points_at_the_number() -> None:
    data = with_metadata_blob(b'{"ok":1,"n":' + b"1" * 100 + b"}")
    f = LayerFile.from_bytes(data)
    with pytest.raises(FormatError, match="100 characters") as exc:
        _ = f.metadata
    assert exc.value.offset is not None and data[exc.value.offset:exc.value.offset + 3] == b"111"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**18, 10**18)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=30)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=5))
def test_ordinary_metadata_round_trips(md: dict[str, object]) -> None:
    f = LayerFile.from_bytes(encode_layer([], np.zeros((0, 4), np.float32), metadata=md))
    assert f.metadata == json.loads(json.dumps(md))

"""Property tests: any chunk set round-trips; any corruption is a FormatError or a valid read."""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment.errors import FormatError
from sediment.format import Chunk, LayerFile, encode_layer

texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                max_size=40)
sources = st.lists(st.one_of(st.integers(1, 2**32 - 1), texts), max_size=4)


@st.composite
def layers(draw: st.DrawFn) -> tuple[list[Chunk], np.ndarray, str, dict[str, object] | None]:
    ids = draw(st.lists(st.integers(1, 2**32 - 1), unique=True, max_size=12))
    chunks = [
        Chunk(id=i, kind=draw(texts), content=draw(texts),
              author=draw(st.sampled_from(["human", "mcp"])),
              confidence=float(np.float32(draw(st.floats(0.0, 1.0)))),
              created_at_ms=draw(st.integers(0, 2**64 - 1)),
              sources=tuple(draw(sources)))
        for i in ids
    ]
    dim = draw(st.integers(1, 16))
    vec = draw(st.lists(st.floats(-4, 4, width=32), min_size=len(ids) * dim,
                        max_size=len(ids) * dim))
    matrix = np.asarray(vec, dtype=np.float32).reshape(len(ids), dim)
    etype = draw(st.sampled_from(["f32", "i8"]))
    md = draw(st.one_of(st.none(), st.fixed_dictionaries({"v": st.just(1), "note": texts})))
    return chunks, matrix, etype, md


@settings(max_examples=150, deadline=None)
@given(layers())
def test_any_chunk_set_round_trips(layer: tuple[list[Chunk], np.ndarray, str, dict | None]
                                   ) -> None:
    chunks, matrix, etype, md = layer
    data = encode_layer(chunks, matrix, dim=matrix.shape[1], element_type=etype, metadata=md)
    f = LayerFile.from_bytes(data)
    assert f.validate() == []
    assert list(f.chunks()) == chunks
    assert f.metadata == md
    if etype == "f32":
        assert np.array_equal(f.embeddings, matrix)
    elif len(chunks):
        back = np.stack([f.vector(i) for i in range(len(chunks))])
        assert np.allclose(back, matrix, atol=f.quant_scale / 2 + 1e-6)
    assert encode_layer(chunks, matrix, dim=matrix.shape[1], element_type=etype,
                        metadata=md) == data


@settings(max_examples=100, deadline=None)
@given(layers(), st.data())
def test_batch_decoding_matches_one_by_one(
        layer: tuple[list[Chunk], np.ndarray, str, dict | None], data: st.DataObject) -> None:
    """``chunks_at`` (search hits) decodes what ``chunk_at`` does, in the order asked,
    repeats included, whatever the string cache already holds."""
    chunks, matrix, etype, md = layer
    f = LayerFile.from_bytes(encode_layer(chunks, matrix, dim=matrix.shape[1],
                                          element_type=etype, metadata=md))
    n = len(chunks)
    warm = data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=n)) if n else []
    for i in warm:
        f.chunk_at(i)
    asked = data.draw(st.lists(st.integers(0, n - 1), max_size=20)) if n else []
    assert f.chunks_at(asked) == [chunks[i] for i in asked]


def _read_everything(data: bytes) -> None:
    f = LayerFile.from_bytes(data)
    for c in f.chunks():
        assert isinstance(c.content, str)
    _ = np.asarray(f.embeddings).sum()
    _ = f.metadata
    f.validate()


BASE = encode_layer(
    [Chunk(i, "canonical" if i % 2 else "note", f"content {i} é", "human", 1.0, i,
           (f"a.md:{i}", 1) if i > 1 else ()) for i in range(1, 6)],
    np.arange(5 * 8, dtype=np.float32).reshape(5, 8), metadata={"v": 1, "x": "y"})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(BASE) - 1), st.integers(0, 255)), min_size=1,
                max_size=8))
def test_random_corruption_is_a_format_error_or_a_valid_read(
        edits: list[tuple[int, int]]) -> None:
    data = bytearray(BASE)
    for at, value in edits:
        data[at] = value
    with contextlib.suppress(FormatError):
        _read_everything(bytes(data))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(BASE)))
def test_truncation_is_a_format_error(cut: int) -> None:
    try:
        _read_everything(BASE[:cut])
    except FormatError:
        return
    assert cut == len(BASE)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    with contextlib.suppress(FormatError):
        _read_everything(data)

"""Writer and reader of the layer format: round trips, determinism, and every rejection."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from sediment.errors import FormatError, NotFoundError, ValidationError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.format import layout as L
from tests.format.appending import appended


def make_chunks(n: int = 3) -> list[Chunk]:
    return [
        Chunk(id=i * 7 + 1, kind="note" if i % 2 else "canonical", content=f"chunk number {i}",
              author="human" if i % 2 == 0 else "mcp",
              confidence=float(np.float32(0.5 + i / 100)),
              created_at_ms=1_700_000_000_000 + i,
              sources=(f"docs/x.md:{i + 1}",) if i % 2 == 0 else (1,))
        for i in range(n)
    ]


def vectors(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, dim)).astype(np.float32)


def encode(n: int = 3, **kw: object) -> bytes:
    return encode_layer(make_chunks(n), vectors(n), **kw)  # type: ignore[arg-type]


def sections(data: bytes) -> dict[int, tuple[int, int, int]]:
    """kind -> (entry offset, section offset, length)."""
    count, table = struct.unpack_from("<QQ", data, 16)
    out = {}
    for i in range(count):
        at = table + 24 * i
        kind, _r, off, length = struct.unpack_from("<IIQQ", data, at)
        out[kind] = (at, off, length)
    return out


def test_round_trip_f32_with_metadata() -> None:
    chunks = make_chunks(5)
    vec = vectors(5)
    md = {"v": 1, "embedding_profile": {"backend": "hash", "model": None, "revision": None,
                                        "dim": 8, "output_norm": "l2"}}
    f = LayerFile.from_bytes(encode_layer(chunks, vec, metadata=md))
    assert list(f.chunks()) == chunks
    assert np.array_equal(f.embeddings, vec)
    assert f.metadata == md
    assert f.validate() == []
    assert f.embedding_info.data_offset % 64 == 0


def test_round_trip_i8() -> None:
    vec = vectors(4)
    f = LayerFile.from_bytes(encode_layer(make_chunks(4), vec, element_type="i8"))
    assert f.element_type == "i8" and f.embeddings.dtype == np.int8
    back = np.stack([f.vector(i) for i in range(4)])
    assert np.max(np.abs(back - vec)) <= f.quant_scale / 2 + 1e-6


def test_empty_layer() -> None:
    f = LayerFile.from_bytes(encode_layer([], np.zeros((0, 384), np.float32)))
    assert f.chunk_count == 0 and f.dim == 384 and list(f.chunks()) == []
    assert f.validate() == []


def test_deterministic_bytes_and_no_timestamps_in_metadata() -> None:
    md = {"v": 1, "tool_name": "sediment"}
    assert encode(metadata=md) == encode(metadata=md)
    assert encode(metadata=md) != encode(metadata={"v": 1, "tool_name": "other"})


def test_open_on_disk_is_zero_copy(tmp_path: Path) -> None:
    p = tmp_path / "AGENTS.db"
    p.write_bytes(encode(50))
    f = LayerFile.open(p)
    assert f.embeddings.base is not None and not f.embeddings.flags.owndata
    assert f.chunk_count == 50


def test_open_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no such layer file"):
        LayerFile.open(tmp_path / "nope.db")
    with pytest.raises(NotFoundError, match="directory"):
        LayerFile.open(tmp_path)


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "AGENTS.db"
    p.write_bytes(b"")
    with pytest.raises(FormatError, match="empty"):
        LayerFile.open(p)


def test_writer_rejects_bad_chunks() -> None:
    good = make_chunks(1)[0]
    bad = [
        Chunk(0, "k", "c", "human", 1.0, 0),
        Chunk(1, "", "c", "human", 1.0, 0),
        Chunk(1, "k", "c", "robot", 1.0, 0),
        Chunk(1, "k", "c", "human", 1.5, 0),
        Chunk(1, "k", "c", "human", 1.0, 0, ("",)),
    ]
    for b in bad:
        with pytest.raises(ValidationError):
            encode_layer([b], vectors(1))
    with pytest.raises(ValidationError, match="duplicate"):
        encode_layer([good, good], vectors(2))
    with pytest.raises(ValidationError, match="shape"):
        encode_layer([good], vectors(2))


# -- every rejection: (description, mutate(bytearray) -> None, expected rule, field) ---------

def _mut_u32(at: int, value: int):  # type: ignore[no-untyped-def]
    return lambda b: struct.pack_into("<I", b, at, value)


def _mut_u64(at: int, value: int):  # type: ignore[no-untyped-def]
    return lambda b: struct.pack_into("<Q", b, at, value)


def _record_field(data: bytes, index: int, offset: int) -> int:
    _e, off, _len = sections(data)[L.SECTION_CHUNK_TABLE]
    _n, records = struct.unpack_from("<QQ", data, off)
    return records + index * 52 + offset


def rejection_cases() -> list[tuple[str, object, str]]:
    data = encode(3, metadata={"v": 1})
    secs = sections(data)
    emb_entry, emb_off, _ = secs[L.SECTION_EMBEDDING_MATRIX]
    _sd_entry, sd_off, _ = secs[L.SECTION_STRING_DICTIONARY]
    ct_entry, ct_off, _ = secs[L.SECTION_CHUNK_TABLE]
    rel_entry, rel_off, _ = secs[L.SECTION_RELATIONSHIPS]
    _md_entry, md_off, _ = secs[L.SECTION_LAYER_METADATA]
    n_strings = struct.unpack_from("<Q", data, sd_off)[0]
    _, entries, blob, _blen = struct.unpack_from("<QQQQ", data, sd_off)
    return [
        ("bad magic", _mut_u32(0, 0x12345678), "magic"),
        ("bad version", lambda b: struct.pack_into("<H", b, 4, 2), "version_major"),
        ("file length", _mut_u64(8, len(data) + 1), "file_length_bytes"),
        ("flags", _mut_u64(32, 1), "flags"),
        ("section count huge", _mut_u64(16, 2**60), "section_count"),
        ("section out of bounds", _mut_u64(emb_entry + 16, 2**40), "SectionEntry.offset"),
        ("section reserved", _mut_u32(emb_entry + 4, 9), "SectionEntry.reserved"),
        ("overlap", _mut_u64(ct_entry + 8, sd_off + 8), "SectionEntry"),
        ("duplicate section", _mut_u32(rel_entry, L.SECTION_CHUNK_TABLE), "SectionEntry.kind"),
        ("missing section", _mut_u32(emb_entry, 77), "SectionEntry.kind"),
        ("string id out of range", _mut_u32(_record_field(data, 1, 8), n_strings + 5),
         "ChunkRecord.content_str_id"),
        ("zero kind id", _mut_u32(_record_field(data, 0, 4), 0), "ChunkRecord.kind_str_id"),
        ("zero embedding row", _mut_u32(_record_field(data, 2, 28), 0),
         "ChunkRecord.embedding_row"),
        ("embedding row too big", _mut_u32(_record_field(data, 2, 28), 4),
         "ChunkRecord.embedding_row"),
        ("duplicate id", lambda b: struct.pack_into("<I", b, _record_field(data, 2, 0),
                                                    struct.unpack_from("<I", data,
                                                    _record_field(data, 0, 0))[0]),
         "ChunkRecord.id"),
        ("reserved0", _mut_u32(_record_field(data, 0, 32), 1), "ChunkRecord.reserved0"),
        ("reserved1", _mut_u32(_record_field(data, 1, 48), 1), "ChunkRecord.reserved1"),
        ("rel range", _mut_u64(_record_field(data, 0, 36), 99), "ChunkRecord.rel_start"),
        ("non-utf8 string", lambda b: b.__setitem__(slice(blob, blob + 1), b"\xff"),
         "string bytes"),
        ("string entry beyond blob", _mut_u64(entries + 8, 2**40), "StringEntry.byte_offset"),
        ("i8 zero scale", lambda b: (struct.pack_into("<I", b, emb_off + 12, 2),
                                     struct.pack_into("<f", b, emb_off + 32, 0.0)),
         "quant_scale"),
        ("f32 scale not 1", lambda b: struct.pack_into("<f", b, emb_off + 32, 2.0),
         "quant_scale"),
        ("unknown element type", _mut_u32(emb_off + 12, 9), "element_type"),
        ("data length", _mut_u64(emb_off + 24, 4), "data_length"),
        ("metadata blob offset", _mut_u64(md_off + 8, md_off + 25), "blob_offset"),
        ("metadata blob length", _mut_u64(md_off + 16, 1), "blob_length"),
        ("metadata version", _mut_u32(md_off, 2), "version"),
        ("metadata not json", lambda b: b.__setitem__(slice(md_off + 24, md_off + 25), b"x"),
         "blob"),
        ("records beyond section", _mut_u64(ct_off, 2**20), "ChunkTableHeader.records_offset"),
        ("relationship string id", lambda b: struct.pack_into(
            "<II", b, struct.unpack_from("<Q", data, rel_off + 8)[0], 2, n_strings + 9),
         "RelationshipRecord.value_u32"),
        ("rels absent but referenced", _mut_u32(rel_entry, 99), "ChunkRecord.rel_start"),
        ("emb reserved", lambda b: struct.pack_into("<f", b, emb_off + 36, 1.0),
         "EmbeddingMatrixHeader.reserved0"),
        ("chunk id 0", _mut_u32(_record_field(data, 1, 0), 0), "ChunkRecord.id"),
        ("author not human or mcp", _mut_u32(_record_field(data, 2, 12),
                                             struct.unpack_from("<I", data,
                                                                _record_field(data, 2, 4))[0]),
         "ChunkRecord.author_str_id"),
        ("unknown relationship kind", _mut_u32(struct.unpack_from("<Q", data, rel_off + 8)[0], 3),
         "RelationshipRecord.kind"),
        ("relationship to chunk 0", lambda b: struct.pack_into(
            "<II", b, struct.unpack_from("<Q", data, rel_off + 8)[0], 1, 0),
         "RelationshipRecord.value_u32"),
    ]


@pytest.mark.parametrize("case", rejection_cases(), ids=lambda c: c[0])
def test_every_rule_is_enforced(case: tuple[str, object, str], tmp_path: Path) -> None:
    _name, mutate, field = case
    data = bytearray(encode(3, metadata={"v": 1}))
    mutate(data)  # type: ignore[operator]
    p = tmp_path / "bad.db"
    p.write_bytes(bytes(data))
    errors: list[FormatError] = []
    try:
        f = LayerFile.open(p)
        errors = f.validate()
    except FormatError as exc:
        errors = [exc]
    assert errors, "the corrupt file was accepted"
    assert any(e.field == field for e in errors), [str(e) for e in errors]
    for e in errors:
        assert e.rule and e.path == str(p)
        assert str(p) in str(e)


def _string_entry(data: bytes, sid: int) -> int:
    _e, sd_off, _ = sections(data)[L.SECTION_STRING_DICTIONARY]
    return int(struct.unpack_from("<Q", data, sd_off + 8)[0]) + (sid - 1) * 16


def test_authors_are_checked_on_every_chunk_however_many_author_strings() -> None:
    """70 chunks with 70 distinct author string ids: each id's bytes say "human" or "mcp",
    except the last chunk's. Once checked only up to 64 distinct author strings."""
    n = 70
    chunks = [Chunk(i + 1, "note", f"c{i}", "human" if i % 2 else "mcp", 1.0, 0)
              for i in range(n)]
    data = bytearray(encode_layer(chunks, vectors(n)))
    words = {}
    for i in range(2):
        sid = struct.unpack_from("<I", data, _record_field(bytes(data), i, 12))[0]
        words[i % 2] = data[_string_entry(bytes(data), sid):_string_entry(bytes(data), sid) + 16]
    for i in range(n):
        content = struct.unpack_from("<I", data, _record_field(bytes(data), i, 8))[0]
        struct.pack_into("<I", data, _record_field(bytes(data), i, 12), content)
        at = _string_entry(bytes(data), content)
        data[at:at + 16] = words[i % 2]
    good = LayerFile.from_bytes(bytes(data))
    assert good.validate() == []
    assert {c.author for c in good.chunks()} == {"human", "mcp"}
    kind = struct.unpack_from("<I", data, _record_field(bytes(data), 0, 4))[0]
    last = _record_field(bytes(data), n - 1, 12)
    struct.pack_into("<I", data, last, kind)
    errors = LayerFile.from_bytes(bytes(data)).validate()
    assert [(e.rule, e.field, e.offset) for e in errors] == [
        ("7.1", "ChunkRecord.author_str_id", last)]
    assert "chunk 70: author is 'note'" in str(errors[0])
    with pytest.raises(FormatError, match="author"):
        LayerFile.from_bytes(bytes(data)).chunk_at(0)


def test_relationships_no_chunk_uses_are_still_checked() -> None:
    """The reference reader checks every relationship record, referenced or not."""
    data = bytearray(encode(3))
    _e, rel_off, _ = sections(bytes(data))[L.SECTION_RELATIONSHIPS]
    count, records = struct.unpack_from("<QQ", data, rel_off)
    for i in range(3):
        struct.pack_into("<QI", data, _record_field(bytes(data), i, 36), 0, 0)
    struct.pack_into("<II", data, records + 8 * (count - 1), 7, 1)
    errors = LayerFile.from_bytes(bytes(data)).validate()
    assert [(e.field, e.offset) for e in errors] == [
        ("RelationshipRecord.kind", records + 8 * (count - 1))]
    assert "unknown kind 7" in str(errors[0]) and "[8.4.7]" in str(errors[0])


def test_chunk_id_zero_names_rule_field_and_offset() -> None:
    data = bytearray(encode(3))
    at = _record_field(bytes(data), 1, 0)
    struct.pack_into("<I", data, at, 0)
    errors = LayerFile.from_bytes(bytes(data)).validate()
    assert [(e.rule, e.field, e.offset) for e in errors] == [("8.4.2", "ChunkRecord.id", at)]
    assert f"offset {at}: ChunkRecord.id: chunk record 1 has id 0" in str(errors[0])


def test_an_empty_layer_with_dim_0_opens_but_does_not_validate() -> None:
    data = bytearray(encode_layer([], np.zeros((0, 8), np.float32)))
    _e, emb_off, _ = sections(bytes(data))[L.SECTION_EMBEDDING_MATRIX]
    struct.pack_into("<I", data, emb_off + 8, 0)
    f = LayerFile.from_bytes(bytes(data))
    assert f.chunk_count == 0 and list(f.chunks()) == []
    assert [(e.rule, e.field, e.offset) for e in f.validate()] == [
        ("8.4.6", "EmbeddingMatrixHeader.dim", emb_off + 8)]


def test_i8_zero_scale_rejected() -> None:
    data = bytearray(encode_layer(make_chunks(2), vectors(2), element_type="i8"))
    _e, emb_off, _ = sections(bytes(data))[L.SECTION_EMBEDDING_MATRIX]
    struct.pack_into("<f", data, emb_off + 32, 0.0)
    with pytest.raises(FormatError) as info:
        LayerFile.from_bytes(bytes(data))
    assert info.value.field == "quant_scale" and info.value.offset == emb_off + 32


def test_validate_reports_several_violations() -> None:
    data = bytearray(encode(3))
    struct.pack_into("<I", data, _record_field(bytes(data), 0, 32), 1)
    struct.pack_into("<I", data, _record_field(bytes(data), 1, 28), 0)
    errors = LayerFile.from_bytes(bytes(data)).validate()
    assert {e.field for e in errors} >= {"ChunkRecord.reserved0", "ChunkRecord.embedding_row"}


def test_unknown_sections_are_ignored_and_order_is_free() -> None:
    """Rebuild a file with sections reversed and an unknown section kind added."""
    data = encode(3, metadata={"v": 1})
    secs = sections(data)
    body = bytearray(40 + 24 * (len(secs) + 1))
    placed = []
    for kind in sorted(secs, reverse=True):
        _e, off, length = secs[kind]
        new_off = len(body)
        chunk = bytearray(data[off:off + length])
        delta = new_off - off
        # patch absolute offsets inside each section header
        if kind == L.SECTION_STRING_DICTIONARY:
            for at in (8, 16):
                v = struct.unpack_from("<Q", chunk, at)[0]
                struct.pack_into("<Q", chunk, at, v + delta)
        elif kind in (L.SECTION_CHUNK_TABLE, L.SECTION_RELATIONSHIPS):
            v = struct.unpack_from("<Q", chunk, 8)[0]
            struct.pack_into("<Q", chunk, 8, v + delta)
        elif kind == L.SECTION_EMBEDDING_MATRIX:
            v = struct.unpack_from("<Q", chunk, 16)[0]
            struct.pack_into("<Q", chunk, 16, v + delta)
        elif kind == L.SECTION_LAYER_METADATA:
            v = struct.unpack_from("<Q", chunk, 8)[0]
            struct.pack_into("<Q", chunk, 8, v + delta)
        body.extend(chunk)
        body.extend(b"\0" * 3)  # unaligned on purpose
        placed.append((kind, new_off, length))
    unknown_off = len(body)
    body.extend(b"future data")
    placed.append((99, unknown_off, 11))
    struct.pack_into("<IHHQQQQ", body, 0, L.MAGIC, 1, 3, len(body), len(placed), 40, 0)
    for i, (kind, off, length) in enumerate(placed):
        struct.pack_into("<IIQQ", body, 40 + 24 * i, kind, 0, off, length)
    f = LayerFile.from_bytes(bytes(body))
    assert f.validate() == []
    original = LayerFile.from_bytes(data)
    assert list(f.chunks()) == list(original.chunks())
    assert np.array_equal(f.embeddings, original.embeddings)
    assert f.header.version_minor == 3


@pytest.mark.parametrize("name", ["AGENTS.db", "AGENTS.delta.db", "AGENTS.user.db"])
def test_append_to_a_foreign_file_keeps_everything(name: str) -> None:
    """An append copies another writer's sections as bytes and adds to them."""
    from tests.conftest import shared

    base = LayerFile.open(shared("interop", "agentsdb-reference", name))
    old = list(base.chunks())
    new = [Chunk(4_000_000_001, "note", "appended", "mcp", 0.5, 5, ("x.md:2", old[0].id)),
           Chunk(4_000_000_002, old[0].kind, "second", "human", 1.0, 6)]
    vecs = vectors(2, dim=base.dim, seed=9)
    out = LayerFile.from_bytes(appended(base, new, vecs, metadata={"v": 1}))
    assert out.validate() == []
    assert list(out.chunks()) == old + new
    assert np.array_equal(np.stack([out.vector(i) for i in range(len(old))]),
                          np.stack([base.vector(i) for i in range(len(old))]))
    assert np.array_equal(out.vector(len(old)), vecs[0])
    kind_sids = out.records["kind"]
    assert kind_sids[-1] == kind_sids[0]  # an existing kind string is reused, not stored again
    assert out.string_count <= base.string_count + 5
    with pytest.raises(ValidationError, match="already exists"):
        appended(base, [Chunk(old[0].id, "k", "c", "human", 1.0, 0)], vectors(1, base.dim),
                      metadata=None)


def test_append_i8_uses_the_base_scale() -> None:
    base = LayerFile.from_bytes(encode_layer(make_chunks(3), vectors(3), element_type="i8"))
    out = LayerFile.from_bytes(appended(
        base, [Chunk(999, "note", "x", "mcp", 0.5, 0)], vectors(1, seed=4), metadata=None))
    assert out.element_type == "i8" and out.quant_scale == base.quant_scale
    assert np.array_equal(out.embeddings[:3], base.embeddings)
    assert out.validate() == []

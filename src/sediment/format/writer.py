"""Deterministic encoder for AGENTS.db layer files.

The same chunks, vectors and metadata always give the same bytes: strings are stored once
in first-use order, sections come in a fixed order, padding is zeros, metadata JSON has
sorted keys and no timestamps. The embedding data starts on a 64-byte boundary so that the
reader's zero-copy view is aligned for SIMD kernels (the RFC allows any offset).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import ValidationError
from sediment.format import layout as L
from sediment.format.model import AUTHORS, Chunk

_ALIGN = 8
_DATA_ALIGN = 64
_U32_MAX = 2**32 - 1


def _pad(n: int, align: int) -> int:
    return (-n) % align


def quantize(vectors: npt.NDArray[np.floating[Any]], scale: float | None = None
             ) -> tuple[npt.NDArray[np.int8], float]:
    """Symmetric int8 quantisation: ``value ~= i8 * scale``.

    With no scale given, ``max |x| / 127`` over the whole matrix (one scale per file, as the
    RFC's single ``quant_scale`` requires). Values beyond the scale are clipped.
    """
    v = np.asarray(vectors, dtype=np.float32)
    if scale is None:
        peak = float(np.max(np.abs(v))) if v.size else 0.0
        scale = peak / 127.0 if peak > 0 else 1.0
    q = np.clip(np.rint(v / np.float32(scale)), -127, 127).astype(np.int8)
    return q, float(np.float32(scale))


def encode_metadata(metadata: dict[str, Any]) -> bytes:
    return json.dumps(metadata, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False).encode("utf-8")


def _check_chunk(c: Chunk) -> None:
    if not 0 < c.id <= _U32_MAX:
        raise ValidationError(f"chunk id {c.id} is outside 1..{_U32_MAX}")
    if not c.kind:
        raise ValidationError(f"chunk {c.id}: kind must be a non-empty string")
    if not c.content:
        raise ValidationError(f"chunk {c.id}: content must be a non-empty string")
    if c.author not in AUTHORS:
        raise ValidationError(f"chunk {c.id}: author {c.author!r} must be 'human' or 'mcp'")
    if not 0.0 <= c.confidence <= 1.0:
        raise ValidationError(f"chunk {c.id}: confidence {c.confidence} is outside 0..1")
    if not 0 <= c.created_at_ms < 2**64:
        raise ValidationError(f"chunk {c.id}: created_at {c.created_at_ms} is not a u64")
    for s in c.sources:
        if isinstance(s, bool) or not isinstance(s, int | str):
            raise ValidationError(f"chunk {c.id}: source {s!r} must be a chunk id or a string")
        if isinstance(s, int) and not 0 < s <= _U32_MAX:
            raise ValidationError(f"chunk {c.id}: source chunk id {s} is outside 1..{_U32_MAX}")
        if isinstance(s, str) and not s:
            raise ValidationError(f"chunk {c.id}: source strings must be non-empty")


def encode_layer(
    chunks: Sequence[Chunk],
    embeddings: npt.NDArray[Any],
    *,
    dim: int | None = None,
    element_type: str = "f32",
    quant_scale: float | None = None,
    metadata: dict[str, Any] | None = None,
) -> bytes:
    """Encode a whole layer file.

    ``embeddings`` holds one row per chunk, in chunk order. For ``element_type="i8"`` it may
    be float (quantised here, with ``quant_scale`` or a computed one) or already int8 (stored
    as is, ``quant_scale`` required).
    """
    n = len(chunks)
    emb = np.asarray(embeddings)
    if emb.ndim != 2 or emb.shape[0] != n:
        raise ValidationError(f"embeddings must have shape ({n}, dim), got {emb.shape}")
    width = int(emb.shape[1]) if n else int(dim or emb.shape[1])
    if dim is not None and n and width != dim:
        raise ValidationError(f"embeddings have {width} dims, the layer has {dim}")
    seen: set[int] = set()
    for c in chunks:
        _check_chunk(c)
        if c.id in seen:
            raise ValidationError(f"duplicate chunk id {c.id}")
        seen.add(c.id)

    if element_type == "f32":
        etype, scale = L.EMBED_F32, 1.0
        data = np.ascontiguousarray(emb, dtype="<f4")
        if n and not np.all(np.isfinite(data)):
            raise ValidationError("embeddings contain NaN or infinity")
    elif element_type == "i8":
        etype = L.EMBED_I8
        if emb.dtype == np.int8:
            if quant_scale is None:
                raise ValidationError("int8 embeddings need their quant_scale")
            data, scale = np.ascontiguousarray(emb), float(np.float32(quant_scale))
        else:
            if n and not np.all(np.isfinite(emb)):
                raise ValidationError("embeddings contain NaN or infinity")
            data, scale = quantize(emb, quant_scale)
        if scale == 0.0 or not np.isfinite(scale):
            raise ValidationError(f"quant_scale {scale} must be finite and non-zero")
    else:
        raise ValidationError(f"element type {element_type!r} must be 'f32' or 'i8'")

    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        got = strings.get(text)
        if got is None:
            got = strings[text] = len(strings) + 1
        return got

    records = np.zeros(n, dtype=L.CHUNK_RECORD_DTYPE)
    rels: list[tuple[int, int]] = []
    kinds, contents, authors, rel_start, rel_count = [], [], [], [], []
    for c in chunks:
        kinds.append(sid(c.kind))
        contents.append(sid(c.content))
        authors.append(sid(c.author))
        rel_start.append(len(rels) if c.sources else 0)
        rel_count.append(len(c.sources))
        for s in c.sources:
            if isinstance(s, int):
                rels.append((L.REL_SOURCE_CHUNK_ID, s))
            else:
                rels.append((L.REL_SOURCE_STRING, sid(s)))
    if n:
        records["id"] = [c.id for c in chunks]
        records["kind"] = kinds
        records["content"] = contents
        records["author"] = authors
        records["confidence"] = [c.confidence for c in chunks]
        records["created_at"] = [c.created_at_ms for c in chunks]
        records["embedding_row"] = np.arange(1, n + 1, dtype=np.uint32)
        records["rel_start"] = rel_start
        records["rel_count"] = rel_count

    encoded = [s.encode("utf-8") for s in strings]
    blob = b"".join(encoded)
    lengths = np.fromiter((len(e) for e in encoded), dtype=np.uint64, count=len(encoded))
    entries = np.zeros(len(encoded), dtype=L.STRING_ENTRY_DTYPE)
    entries["length"] = lengths
    if len(encoded):
        entries["offset"][1:] = np.cumsum(lengths)[:-1]

    has_rels = bool(rels)
    section_count = 3 + int(has_rels) + int(metadata is not None)
    out = bytearray(L.FILE_HEADER.size + section_count * L.SECTION_ENTRY.size)
    table: list[tuple[int, int, int]] = []

    def align(to: int) -> None:
        out.extend(b"\0" * _pad(len(out), to))

    align(_ALIGN)
    start = len(out)
    entries_off = start + L.STRING_DICT_HEADER.size
    bytes_off = entries_off + entries.nbytes
    out.extend(L.STRING_DICT_HEADER.pack(len(encoded), entries_off, bytes_off, len(blob)))
    out.extend(entries.tobytes())
    out.extend(blob)
    table.append((L.SECTION_STRING_DICTIONARY, start, len(out) - start))

    align(_ALIGN)
    start = len(out)
    out.extend(L.CHUNK_TABLE_HEADER.pack(n, start + L.CHUNK_TABLE_HEADER.size))
    out.extend(records.tobytes())
    table.append((L.SECTION_CHUNK_TABLE, start, len(out) - start))

    if has_rels:
        align(_ALIGN)
        start = len(out)
        rel_arr = np.array(rels, dtype=np.uint32).reshape(-1, 2).astype("<u4")
        out.extend(L.RELATIONSHIPS_HEADER.pack(len(rels), start + L.RELATIONSHIPS_HEADER.size))
        out.extend(rel_arr.tobytes())
        table.append((L.SECTION_RELATIONSHIPS, start, len(out) - start))

    if metadata is not None:
        align(_ALIGN)
        start = len(out)
        mblob = encode_metadata(metadata)
        out.extend(L.LAYER_METADATA_HEADER.pack(1, L.LAYER_METADATA_JSON, start + 24, len(mblob)))
        out.extend(mblob)
        table.append((L.SECTION_LAYER_METADATA, start, len(out) - start))

    out.extend(b"\0" * _pad(len(out) + L.EMBEDDING_HEADER.size, _DATA_ALIGN))
    start = len(out)
    raw = data.tobytes()
    data_off = start + L.EMBEDDING_HEADER.size
    out.extend(L.EMBEDDING_HEADER.pack(n, width, etype, data_off, len(raw), scale, 0.0))
    out.extend(raw)
    table.append((L.SECTION_EMBEDDING_MATRIX, start, len(out) - start))

    L.FILE_HEADER.pack_into(out, 0, L.MAGIC, L.VERSION_MAJOR, L.VERSION_MINOR, len(out),
                            section_count, L.FILE_HEADER.size, 0)
    for i, (kind, off, length) in enumerate(table):
        L.SECTION_ENTRY.pack_into(out, L.FILE_HEADER.size + i * L.SECTION_ENTRY.size,
                                  kind, 0, off, length)
    return bytes(out)

"""Deterministic encoder for AGENTS.db layer files.

The same chunks, vectors and metadata always give the same bytes: strings are stored once
in first-use order, sections come in a fixed order, padding is zeros, metadata JSON has
sorted keys and no timestamps. The embedding data starts on a 64-byte boundary so that the
reader's zero-copy view is aligned for SIMD kernels (the RFC allows any offset).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import ValidationError
from sediment.format import layout as L
from sediment.format.metadata import encode_metadata
from sediment.format.model import Chunk, check_chunk
from sediment.format.reader import LayerFile

_ALIGN = 8
_DATA_ALIGN = 64


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


def encode_layer(
    chunks: Sequence[Chunk],
    embeddings: npt.NDArray[Any],
    *,
    dim: int | None = None,
    element_type: str = "f32",
    quant_scale: float | None = None,
    metadata: dict[str, Any] | None = None,
    vectorless: Sequence[bool] | None = None,
) -> bytearray:
    """Encode a whole layer file.

    ``embeddings`` holds one row per chunk, in chunk order. For ``element_type="i8"`` it may
    be float (quantised here, with ``quant_scale`` or a computed one) or already int8 (stored
    as is, ``quant_scale`` required). Chunks flagged in ``vectorless`` (their rows must be
    zeros: events, which no search ranks by vector) share one zero row; the RFC asks only
    that every ``embedding_row`` lie in ``1..row_count``.
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
        check_chunk(c)
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
    rows, keep = _row_plan(data, vectorless, row_base=0, zero_row=None)
    if keep is not None:
        data = data[keep]

    table = _ChunkEncoder(first_sid=1, rel_base=0, row_base=0)
    table.add(chunks)
    return _assemble(_Parts(
        entries=table.entries(), blob=table.blob(), records=table.records(chunks, rows),
        rels=table.relationships(), matrix=_bytes_view(data), rows=int(data.shape[0]),
        dim=width, etype=etype, scale=scale, metadata=metadata))


def _row_plan(data: npt.NDArray[Any], vectorless: Sequence[bool] | None, *, row_base: int,
              zero_row: int | None) -> tuple[npt.NDArray[np.uint32] | None,
                                             npt.NDArray[np.bool_] | None]:
    """The 1-based embedding row of each chunk and which of its rows are stored, when some
    chunks are ``vectorless``: those point at ``zero_row`` (an all-zero row already in the
    file), or at the first of them, which stores its row. None, None: one row per chunk."""
    n = len(data)
    flags = np.asarray(vectorless if vectorless is not None else [], dtype=bool)
    if not flags.any():
        return None, None
    if len(flags) != n:
        raise ValidationError(f"vectorless needs one flag per chunk: {len(flags)} for {n}")
    if data[flags].any():
        raise ValidationError("a chunk marked vectorless has a non-zero vector")
    if zero_row is None:
        first = int(np.flatnonzero(flags)[0])
        flags = flags.copy()
        flags[first] = False
    keep = ~flags
    rows = (row_base + np.cumsum(keep)).astype(np.uint32)
    rows[flags] = zero_row if zero_row is not None else rows[first]
    return rows, keep


def zero_row(base: LayerFile, *, recent: int = 256) -> int | None:
    """A 1-based row of ``base`` that is all zeros, looked for among the rows of its latest
    ``recent`` chunks (where an append that shares one last put it), or None."""
    if not base.chunk_count or not base.embedding_info.rows:
        return None
    rows = np.unique(base.records["embedding_row"][-recent:].astype(np.int64))
    rows = rows[(rows >= 1) & (rows <= base.embedding_info.rows)]
    if not len(rows):
        return None
    zero = ~np.asarray(base.embeddings[rows - 1]).any(axis=1)
    found = rows[zero]
    return int(found[-1]) if len(found) else None


def write_append(
    fd: int,
    base: LayerFile,
    chunks: Sequence[Chunk],
    embeddings: npt.NDArray[Any],
    *,
    metadata: dict[str, Any] | None,
    vectorless: Sequence[bool] | None = None,
) -> int:
    """Write ``base`` with ``chunks`` appended into the empty file ``fd``; return the count
    of bytes.

    The cost is the copy of the old sections plus the work for the new chunks: existing
    chunks are never decoded. Existing strings, records, relationships and rows keep their
    ids, offsets and order; kinds and authors already in the dictionary are reused. New
    vectors take the base's element type (int8 with the base's ``quant_scale``). New chunks
    flagged ``vectorless`` share a zero row (:func:`zero_row`, else one new row).

    The old sections go from the base's mapping straight to the file (``pwrite`` of views),
    so no buffer of the new file's size is allocated, zeroed and filled first: at 100k f32
    chunks that buffer cost more than the write and fsync together (docs/architecture.md,
    "Appends").
    """
    return _assemble_into(_append_parts(base, chunks, embeddings, metadata, vectorless),
                          _FileSink(fd))


def _contains_any(haystack: npt.NDArray[Any], needles: npt.NDArray[np.int64]) -> int | None:
    """The first of ``needles`` found in ``haystack``, or None; a handful of needles (an
    append's usual case) are compared directly instead of sorting the whole haystack."""
    if len(needles) <= 16:
        for x in needles.tolist():
            if len(haystack) and bool(np.any(haystack == x)):
                return int(x)
        return None
    clash = np.intersect1d(needles, haystack.astype(np.int64))
    return int(clash[0]) if len(clash) else None


def _known_strings(base: LayerFile, records: npt.NDArray[Any], wanted: set[str]
                   ) -> dict[str, int]:
    """String ids of the kinds and authors already in ``base``'s dictionary, enough to
    cover ``wanted``: those of the latest records first (an agent's layer repeats the same
    few), all records only when some wanted string is not among them."""
    known: dict[str, int] = {}
    for part in (records[-256:], records):
        for col in ("kind", "author"):
            for sid in np.unique(part[col]).tolist():
                known.setdefault(base.string(int(sid)), int(sid))
        if wanted <= known.keys():
            break
    return known


def _append_parts(base: LayerFile, chunks: Sequence[Chunk], embeddings: npt.NDArray[Any],
                  metadata: dict[str, Any] | None,
                  vectorless: Sequence[bool] | None = None) -> _Parts:
    n = len(chunks)
    emb = np.asarray(embeddings)
    if emb.ndim != 2 or emb.shape[0] != n or (n and emb.shape[1] != base.dim):
        raise ValidationError(f"embeddings must have shape ({n}, {base.dim}), got {emb.shape}")
    new_ids = np.asarray([c.id for c in chunks], dtype=np.int64)
    for c in chunks:
        check_chunk(c)
    if len(np.unique(new_ids)) != n:
        raise ValidationError("duplicate chunk id among the new chunks")
    clash = _contains_any(base.ids, new_ids)
    if clash is not None:
        raise ValidationError(f"chunk id {clash} already exists in the layer")
    if not np.all(np.isfinite(emb)):
        raise ValidationError("embeddings contain NaN or infinity")
    if base.element_type == "i8":
        data, _ = quantize(emb, base.quant_scale)
    else:
        data = np.ascontiguousarray(emb, dtype="<f4")
    info = base.embedding_info
    shared = zero_row(base) if vectorless is not None and any(vectorless) else None
    rows, keep = _row_plan(data, vectorless, row_base=info.rows, zero_row=shared)
    if keep is not None:
        data = np.ascontiguousarray(data[keep])
    raw = base.raw_sections()
    known = _known_strings(base, raw.records, {c.kind for c in chunks} | {
        c.author for c in chunks})
    enc = _ChunkEncoder(first_sid=base.string_count + 1, rel_base=base.relationship_count,
                        row_base=base.embedding_info.rows, known=known,
                        blob_base=len(raw.blob))
    enc.add(chunks)
    return (_Parts(
        entries=[raw.entries, enc.entries()], blob=[raw.blob, enc.blob()],
        records=[raw.records, enc.records(chunks, rows)],
        rels=[raw.relationships, enc.relationships()],
        matrix=[raw.matrix, _bytes_view(data)], rows=info.rows + len(data), dim=base.dim,
        etype=info.element_type, scale=info.quant_scale, metadata=metadata))


class _ChunkEncoder:
    """Turns chunks into string-dictionary entries, records and relationships.

    String ids start at ``first_sid`` (an append continues an existing dictionary);
    ``known`` maps strings already in that dictionary to their ids, so kinds and authors
    are not stored twice.
    """

    def __init__(self, *, first_sid: int, rel_base: int, row_base: int,
                 known: dict[str, int] | None = None, blob_base: int = 0) -> None:
        self.first_sid = first_sid
        self.rel_base = rel_base
        self.row_base = row_base
        self.blob_base = blob_base
        self.known = dict(known or {})
        self.new: dict[str, int] = {}
        self.cols: dict[str, list[int]] = {k: [] for k in
                                           ("kind", "content", "author", "rs", "rc")}
        self.rels: list[tuple[int, int]] = []

    def sid(self, text: str) -> int:
        got = self.known.get(text)
        if got is None:
            got = self.known[text] = self.new[text] = self.first_sid + len(self.new)
        return got

    def add(self, chunks: Sequence[Chunk]) -> None:
        c_kind, c_content, c_author = self.cols["kind"], self.cols["content"], self.cols["author"]
        rs, rc = self.cols["rs"], self.cols["rc"]
        for c in chunks:
            c_kind.append(self.sid(c.kind))
            c_content.append(self.sid(c.content))
            c_author.append(self.sid(c.author))
            rs.append(self.rel_base + len(self.rels) if c.sources else 0)
            rc.append(len(c.sources))
            for src in c.sources:
                if isinstance(src, int):
                    self.rels.append((L.REL_SOURCE_CHUNK_ID, src))
                else:
                    self.rels.append((L.REL_SOURCE_STRING, self.sid(src)))

    def _encoded(self) -> list[bytes]:
        return [text.encode("utf-8") for text in self.new]

    def entries(self) -> np.ndarray:
        encoded = self._encoded()
        lengths = np.fromiter((len(e) for e in encoded), dtype=np.uint64, count=len(encoded))
        out = np.zeros(len(encoded), dtype=L.STRING_ENTRY_DTYPE)
        out["length"] = lengths
        if len(encoded):
            out["offset"][0] = self.blob_base
            out["offset"][1:] = self.blob_base + np.cumsum(lengths)[:-1]
        return out

    def blob(self) -> bytes:
        return b"".join(self._encoded())

    def records(self, chunks: Sequence[Chunk],
                rows: npt.NDArray[np.uint32] | None = None) -> np.ndarray:
        """The chunk records; ``rows`` gives each chunk's 1-based embedding row when they do
        not simply follow ``row_base`` one per chunk."""
        n = len(chunks)
        out = np.zeros(n, dtype=L.CHUNK_RECORD_DTYPE)
        if n:
            out["id"] = [c.id for c in chunks]
            out["kind"] = self.cols["kind"]
            out["content"] = self.cols["content"]
            out["author"] = self.cols["author"]
            out["confidence"] = [c.confidence for c in chunks]
            out["created_at"] = [c.created_at_ms for c in chunks]
            out["embedding_row"] = rows if rows is not None else np.arange(
                self.row_base + 1, self.row_base + n + 1, dtype=np.uint32)
            out["rel_start"] = self.cols["rs"]
            out["rel_count"] = self.cols["rc"]
        return out

    def relationships(self) -> np.ndarray:
        out = np.zeros(len(self.rels), dtype=L.RELATIONSHIP_DTYPE)
        if self.rels:
            arr = np.asarray(self.rels, dtype=np.uint32)
            out["kind"], out["value"] = arr[:, 0], arr[:, 1]
        return out


@dataclass(slots=True)
class _Parts:
    entries: np.ndarray | Sequence[np.ndarray]
    blob: bytes | memoryview | Sequence[bytes | memoryview]
    records: np.ndarray | Sequence[np.ndarray]
    rels: np.ndarray | Sequence[np.ndarray]
    matrix: memoryview | Sequence[memoryview]
    rows: int
    dim: int
    etype: int
    scale: float
    metadata: dict[str, Any] | None


def _pieces(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _nbytes(piece: Any) -> int:
    return int(piece.nbytes) if isinstance(piece, np.ndarray | memoryview) else len(piece)


class _BufferSink:
    """Writes into a buffer allocated at the file's final size."""

    def __init__(self, size: int) -> None:
        self.out = bytearray(size)
        self.view = memoryview(self.out)

    def pack(self, st: Any, offset: int, *values: Any) -> None:
        st.pack_into(self.out, offset, *values)

    def write(self, offset: int, data: Any) -> None:
        size = data.nbytes if isinstance(data, memoryview) else len(data)
        self.view[offset:offset + size] = data


class _FileSink:
    """Writes into an open file: pieces are gathered by offset, then written front to back
    in one pass with the padding between them as zeros, so the file is laid down as one
    sequential stream (scattered writes left holes and made the fsync after them slower)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pieces: list[tuple[int, memoryview]] = []

    def pack(self, st: Any, offset: int, *values: Any) -> None:
        self.write(offset, st.pack(*values))

    def write(self, offset: int, data: Any) -> None:
        self.pieces.append((offset, memoryview(data).cast("B")))

    def flush(self, total: int) -> None:
        at = 0
        batch: list[memoryview] = []
        for offset, view in sorted(self.pieces, key=lambda p: p[0]):
            if offset < at:
                raise AssertionError(f"overlapping writes at {offset} (already at {at})")
            if offset > at:
                batch.append(memoryview(bytes(offset - at)))
            batch.append(view)
            at = offset + len(view)
        if total > at:
            batch.append(memoryview(bytes(total - at)))
        _write_all(self.fd, batch)
        self.pieces.clear()


def _write_all(fd: int, views: list[memoryview]) -> None:
    """``os.writev`` in batches of at most 512 buffers, retrying short writes."""
    pending = [v for v in views if len(v)]
    while pending:
        done = os.writev(fd, pending[:512])
        while done and pending:
            head = pending[0]
            if done >= len(head):
                done -= len(head)
                pending.pop(0)
            else:
                pending[0] = head[done:]
                done = 0


def _raw(piece: Any) -> Any:
    """A piece's bytes, without a copy where it is a contiguous array."""
    if isinstance(piece, np.ndarray):
        if piece.flags.c_contiguous:
            return piece.reshape(-1).view(np.uint8).data
        return piece.tobytes()
    return piece


def _assemble(p: _Parts) -> bytearray:
    """Lay the sections out once, in a buffer allocated at its final size.

    The buffer itself is returned (no ``bytes`` copy): a 1M-chunk f32 file is 1.6 GB.
    """
    sink: _BufferSink | None = None

    def make(size: int) -> _BufferSink:
        nonlocal sink
        sink = _BufferSink(size)
        return sink

    _assemble_into(p, make)
    assert sink is not None
    return sink.out


def _assemble_into(p: _Parts, target: Any) -> int:
    """Lay the sections out and write them through a sink: ``target`` is a sink, or a
    function making one from the file's size. Returns the file's size."""
    entries, blob = _pieces(p.entries), _pieces(p.blob)
    records, rels, matrix = _pieces(p.records), _pieces(p.rels), _pieces(p.matrix)
    n_strings = sum(len(e) for e in entries)
    n_records = sum(len(r) for r in records)
    n_rels = sum(len(r) for r in rels)
    blob_len = sum(_nbytes(b) for b in blob)
    matrix_len = sum(_nbytes(m) for m in matrix)
    mblob = encode_metadata(p.metadata) if p.metadata is not None else None
    section_count = 3 + int(n_rels > 0) + int(mblob is not None)

    layout: list[tuple[int, int, int]] = []
    at = L.FILE_HEADER.size + section_count * L.SECTION_ENTRY.size

    def place(kind: int, length: int, align: int = _ALIGN, header: int = 0) -> int:
        nonlocal at
        at += _pad(at + header, align)
        start = at
        layout.append((kind, start, length))
        at += length
        return start

    sd = place(L.SECTION_STRING_DICTIONARY, L.STRING_DICT_HEADER.size + 16 * n_strings + blob_len)
    ct = place(L.SECTION_CHUNK_TABLE, L.CHUNK_TABLE_HEADER.size + 52 * n_records)
    rl = place(L.SECTION_RELATIONSHIPS, L.RELATIONSHIPS_HEADER.size + 8 * n_rels) \
        if n_rels else 0
    md = place(L.SECTION_LAYER_METADATA, 24 + len(mblob)) if mblob is not None else 0
    em = place(L.SECTION_EMBEDDING_MATRIX, L.EMBEDDING_HEADER.size + matrix_len,
               align=_DATA_ALIGN, header=L.EMBEDDING_HEADER.size)
    total = at
    sink = target(total) if callable(target) else target

    def put(offset: int, pieces: list[Any]) -> int:
        for piece in pieces:
            raw = _raw(piece)
            size = raw.nbytes if isinstance(raw, memoryview) else len(raw)
            if size:
                sink.write(offset, raw)
            offset += size
        return offset

    entries_off = sd + L.STRING_DICT_HEADER.size
    bytes_off = entries_off + 16 * n_strings
    sink.pack(L.STRING_DICT_HEADER, sd, n_strings, entries_off, bytes_off, blob_len)
    put(entries_off, entries)
    put(bytes_off, blob)
    sink.pack(L.CHUNK_TABLE_HEADER, ct, n_records, ct + L.CHUNK_TABLE_HEADER.size)
    put(ct + L.CHUNK_TABLE_HEADER.size, records)
    if n_rels:
        sink.pack(L.RELATIONSHIPS_HEADER, rl, n_rels, rl + L.RELATIONSHIPS_HEADER.size)
        put(rl + L.RELATIONSHIPS_HEADER.size, rels)
    if mblob is not None:
        sink.pack(L.LAYER_METADATA_HEADER, md, 1, L.LAYER_METADATA_JSON, md + 24,
                  len(mblob))
        put(md + 24, [mblob])
    data_off = em + L.EMBEDDING_HEADER.size
    sink.pack(L.EMBEDDING_HEADER, em, p.rows, p.dim, p.etype, data_off, matrix_len,
              p.scale, 0.0)
    put(data_off, matrix)
    sink.pack(L.FILE_HEADER, 0, L.MAGIC, L.VERSION_MAJOR, L.VERSION_MINOR, total,
              section_count, L.FILE_HEADER.size, 0)
    for i, (kind, off, length) in enumerate(layout):
        sink.pack(L.SECTION_ENTRY, L.FILE_HEADER.size + i * L.SECTION_ENTRY.size,
                  kind, 0, off, length)
    if isinstance(sink, _FileSink):
        sink.flush(total)
    return total


def _bytes_view(array: npt.NDArray[Any]) -> memoryview:
    """The bytes of a C-contiguous array without copying them (also for empty arrays)."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8).data

"""Memory-mapped, zero-copy reader for AGENTS.db layer files (RFC section 8).

Opening a file maps it and checks the header, the section table and every section header
against the file size: O(1) work that never touches the embedding data and never allocates
more than the fixed headers. The per-record checks (ids, string ids, authors, embedding
rows, reserved fields, relationship ranges and kinds, duplicate ids) are vectorised over the
mapped chunk table and relationships and run once, the first time chunk data is used; they
reject at least what the reference reader rejects. ``iter_violations`` runs every rule,
including UTF-8 decoding of every string and the bounded decoding of the metadata JSON
(``metadata.py``), and reports all violations instead of the first.
"""

from __future__ import annotations

import itertools
import mmap
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import FormatError, NotFoundError
from sediment.format import layout as L
from sediment.format.arrays import distinct
from sediment.format.mapguard import guarded_map
from sediment.format.metadata import MetadataError, decode_metadata
from sediment.format.model import AUTHORS, Chunk, Source


@dataclass(frozen=True, slots=True)
class Section:
    kind: int
    offset: int
    length: int
    entry_offset: int

    @property
    def end(self) -> int:
        return self.offset + self.length

    @property
    def name(self) -> str:
        return L.SECTION_NAMES.get(self.kind, f"kind {self.kind}")


@dataclass(frozen=True, slots=True)
class Header:
    version_major: int
    version_minor: int
    file_length: int
    section_count: int
    sections_offset: int
    flags: int


@dataclass(frozen=True, slots=True)
class EmbeddingInfo:
    rows: int
    dim: int
    element_type: int
    data_offset: int
    data_length: int
    quant_scale: float

    @property
    def element_name(self) -> str:
        return L.ELEMENT_NAMES.get(self.element_type, str(self.element_type))


@dataclass(frozen=True, slots=True)
class RawSections:
    entries: np.ndarray
    blob: memoryview
    records: np.ndarray
    relationships: np.ndarray
    matrix: memoryview


class _Structure:
    """Offsets of everything in the file, established by the O(1) checks."""

    header: Header
    sections: list[Section]
    strings_count: int
    strings_entries: int
    strings_bytes: int
    strings_bytes_len: int
    chunk_count: int
    chunk_records: int
    embedding: EmbeddingInfo
    rel_count: int
    rel_records: int
    has_relationships: bool
    metadata_blob: tuple[int, int] | None


def _err(msg: str, rule: str, fld: str, offset: int | None) -> FormatError:
    return FormatError(msg, rule=rule, field=fld, offset=offset)


def _parse_structure(buf: memoryview | bytes | mmap.mmap, size: int) -> _Structure:
    """Check the header, section table and section headers; raise the first violation."""
    s = _Structure()
    if size < L.FILE_HEADER.size:
        raise _err(f"file is {size} bytes, shorter than the 40-byte header", "8.4.3",
                   "header", 0)
    magic, vmaj, vmin, flen, scount, soff, flags = L.FILE_HEADER.unpack_from(buf, 0)
    if magic != L.MAGIC:
        raise _err(f"bad magic 0x{magic:08x}, expected 0x{L.MAGIC:08x} ('AGDB')", "8.4.3",
                   "magic", 0)
    if vmaj != L.VERSION_MAJOR:
        raise _err(f"unsupported version_major {vmaj}, expected 1", "8.4.3",
                   "version_major", 4)
    if flen != size:
        raise _err(f"file_length_bytes is {flen} but the file is {size} bytes", "8.4.3",
                   "file_length_bytes", 8)
    if flags != 0:
        raise _err(f"flags is {flags}, reserved and must be 0 in v1", "8.4.3", "flags", 32)
    s.header = Header(vmaj, vmin, flen, scount, soff, flags)
    if scount > (size - L.FILE_HEADER.size) // L.SECTION_ENTRY.size:
        raise _err(f"section_count {scount} cannot fit in a {size}-byte file", "8.4.3",
                   "section_count", 16)
    if soff < L.FILE_HEADER.size or soff + scount * L.SECTION_ENTRY.size > size:
        raise _err(f"section table at {soff} ({scount} entries) is outside the file or "
                   "overlaps the header", "8.4.3", "sections_offset", 24)
    sections: list[Section] = []
    for i in range(scount):
        at = soff + i * L.SECTION_ENTRY.size
        kind, reserved, off, length = L.SECTION_ENTRY.unpack_from(buf, at)
        if reserved != 0:
            raise _err(f"section {i} reserved field is {reserved}, must be 0", "8.4.3",
                       "SectionEntry.reserved", at + 4)
        if off > size or length > size - off:
            raise _err(f"section {i} ({L.SECTION_NAMES.get(kind, kind)}) spans {off}.."
                       f"{off + length}, beyond the {size}-byte file", "8.4.3",
                       "SectionEntry.offset", at + 8)
        sections.append(Section(kind, off, length, at))
    s.sections = sections
    reserved_ranges = [(0, L.FILE_HEADER.size, "header"),
                       (soff, soff + scount * L.SECTION_ENTRY.size, "section table")]
    spans = sorted(
        [(a, b, n) for a, b, n in reserved_ranges if b > a]
        + [(x.offset, x.end, f"{x.name} section") for x in sections if x.length > 0]
    )
    for (_a0, a1, an), (b0, _b1, bn) in itertools.pairwise(spans):
        if b0 < a1:
            raise _err(f"{bn} at {b0} overlaps {an} ending at {a1}", "8.4.2", "SectionEntry",
                       b0)
    by_kind: dict[int, Section] = {}
    for x in sections:
        if x.kind in by_kind and x.kind in L.SECTION_NAMES:
            raise _err(f"duplicate {x.name} section", "8.4.3", "SectionEntry.kind",
                       x.entry_offset)
        by_kind.setdefault(x.kind, x)
    for kind in L.REQUIRED_SECTIONS:
        if kind not in by_kind:
            raise _err(f"missing required {L.SECTION_NAMES[kind]} section", "8.4.3",
                       "SectionEntry.kind", soff)

    def sub_header(sec: Section, st: Any, what: str) -> tuple[Any, ...]:
        if sec.length < st.size:
            raise _err(f"{sec.name} section is {sec.length} bytes, shorter than its "
                       f"{st.size}-byte header", "8.4", what, sec.offset)
        return tuple(st.unpack_from(buf, sec.offset))

    def within(sec: Section, start: int, count: int, item: int, fld: str, at: int) -> None:
        if start < sec.offset or start > sec.end or count > (sec.end - start) // item:
            raise _err(f"{count} x {item}-byte records at {start} do not fit inside the "
                       f"{sec.name} section ({sec.offset}..{sec.end})", "8.4", fld, at)

    sd = by_kind[L.SECTION_STRING_DICTIONARY]
    n, eoff, boff, blen = sub_header(sd, L.STRING_DICT_HEADER, "StringDictionaryHeader")
    within(sd, eoff, n, 16, "StringDictionaryHeader.entries_offset", sd.offset + 8)
    within(sd, boff, blen, 1, "StringDictionaryHeader.bytes_offset", sd.offset + 16)
    s.strings_count, s.strings_entries, s.strings_bytes, s.strings_bytes_len = n, eoff, boff, blen

    ct = by_kind[L.SECTION_CHUNK_TABLE]
    n, roff = sub_header(ct, L.CHUNK_TABLE_HEADER, "ChunkTableHeader")
    within(ct, roff, n, L.CHUNK_RECORD_DTYPE.itemsize, "ChunkTableHeader.records_offset",
           ct.offset + 8)
    s.chunk_count, s.chunk_records = n, roff

    em = by_kind[L.SECTION_EMBEDDING_MATRIX]
    rows, dim, etype, doff, dlen, scale, rsv = sub_header(em, L.EMBEDDING_HEADER,
                                                          "EmbeddingMatrixHeader")
    if etype not in L.ELEMENT_SIZES:
        raise _err(f"unknown element_type {etype} (1 = f32, 2 = i8)", "8.4.6", "element_type",
                   em.offset + 12)
    if rsv != 0.0 or np.signbit(np.float32(rsv)):
        raise _err("reserved0 must be 0", "8.4.6", "EmbeddingMatrixHeader.reserved0",
                   em.offset + 36)
    if etype == L.EMBED_F32 and scale != 1.0:
        raise _err(f"quant_scale is {scale} but must be 1.0 for f32", "8.4.6", "quant_scale",
                   em.offset + 32)
    if etype == L.EMBED_I8 and (scale == 0.0 or not np.isfinite(scale)):
        raise _err(f"quant_scale is {scale}; i8 needs a finite non-zero scale", "8.4.6",
                   "quant_scale", em.offset + 32)
    if rows > 0 and dim == 0:
        raise _err(f"dim is 0 with {rows} rows", "8.4.6", "dim", em.offset + 8)
    esize = L.ELEMENT_SIZES[etype]
    if dim and rows > size // (dim * esize):
        raise _err(f"{rows} rows x {dim} dims cannot fit in a {size}-byte file", "8.4.6",
                   "row_count", em.offset)
    if dlen != rows * dim * esize:
        raise _err(f"data_length is {dlen} but {rows} rows x {dim} x {esize} bytes = "
                   f"{rows * dim * esize}", "8.4.6", "data_length", em.offset + 24)
    within(em, doff, dlen, 1, "EmbeddingMatrixHeader.data_offset", em.offset + 16)
    s.embedding = EmbeddingInfo(rows, dim, etype, doff, dlen, float(scale))

    rel = by_kind.get(L.SECTION_RELATIONSHIPS)
    s.has_relationships = rel is not None
    s.rel_count, s.rel_records = 0, 0
    if rel is not None:
        n, roff = sub_header(rel, L.RELATIONSHIPS_HEADER, "RelationshipsHeader")
        within(rel, roff, n, 8, "RelationshipsHeader.records_offset", rel.offset + 8)
        s.rel_count, s.rel_records = n, roff

    md = by_kind.get(L.SECTION_LAYER_METADATA)
    s.metadata_blob = None
    if md is not None:
        ver, fmt, boff, blen = sub_header(md, L.LAYER_METADATA_HEADER, "LayerMetadataHeader")
        if ver != 1:
            raise _err(f"layer metadata version is {ver}, must be 1", "8.4.8", "version",
                       md.offset)
        if fmt != L.LAYER_METADATA_JSON:
            raise _err(f"layer metadata format is {fmt}, must be 1 (JSON)", "8.4.8",
                       "format", md.offset + 4)
        if boff != md.offset + 24:
            raise _err(f"blob_offset is {boff}, must equal section offset + 24 = "
                       f"{md.offset + 24}", "8.4.8", "blob_offset", md.offset + 8)
        if blen != md.length - 24:
            raise _err(f"blob_length is {blen}, must equal section length - 24 = "
                       f"{md.length - 24}", "8.4.8", "blob_length", md.offset + 16)
        s.metadata_blob = (boff, blen)
    return s


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else None


STRING_CACHE = 65536
"""Most decoded strings a LayerFile keeps (see :meth:`LayerFile.string`)."""


class LayerFile:
    """A read-only, memory-mapped layer file.

    ``embeddings`` and ``records`` are numpy views into the mapping: no copy is made and
    nothing is read until a page is touched. The mapping stays valid after the file is
    replaced by an atomic rename, so a reader keeps a consistent snapshot.
    """

    def __init__(self, buf: mmap.mmap | bytes, path: str | None = None) -> None:
        self.path = path
        self._buf = buf
        size = len(buf)
        try:
            self._s = _parse_structure(buf, size)
        except FormatError as exc:
            if path:
                raise exc.with_path(path) from None
            raise
        self._strings: dict[int, str] = {}
        self._checked = False

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> LayerFile:
        p = Path(path)
        try:
            if not stat.S_ISREG(os.stat(p).st_mode) and not os.path.isdir(p):
                raise FormatError("not a regular file (a FIFO or device cannot be mapped)",
                                  rule="8.4.3", field="header", offset=0, path=str(p))
            mm = guarded_map(str(p))
        except FileNotFoundError as exc:
            raise NotFoundError(f"{p}: no such layer file") from exc
        except IsADirectoryError as exc:
            raise NotFoundError(f"{p}: is a directory, not a layer file") from exc
        except PermissionError as exc:
            raise NotFoundError(f"{p}: permission denied") from exc
        return cls(mm, str(p))

    @classmethod
    def from_bytes(cls, data: bytes, path: str | None = None) -> LayerFile:
        return cls(bytes(data), path)

    # -- header-level facts (no chunk data touched) -------------------------------------
    @property
    def header(self) -> Header:
        return self._s.header

    @property
    def sections(self) -> list[Section]:
        return list(self._s.sections)

    @property
    def size(self) -> int:
        return len(self._buf)

    @property
    def chunk_count(self) -> int:
        return self._s.chunk_count

    @property
    def embedding_info(self) -> EmbeddingInfo:
        return self._s.embedding

    @property
    def dim(self) -> int:
        return self._s.embedding.dim

    @property
    def element_type(self) -> str:
        return self._s.embedding.element_name

    @property
    def quant_scale(self) -> float:
        return self._s.embedding.quant_scale

    @property
    def string_count(self) -> int:
        return self._s.strings_count

    @property
    def relationship_count(self) -> int:
        return self._s.rel_count

    @cached_property
    def metadata(self) -> dict[str, Any] | None:
        """The layer metadata JSON object, or None when the section is absent."""
        if self._s.metadata_blob is None:
            return None
        off, length = self._s.metadata_blob
        try:
            return decode_metadata(bytes(self._buf[off:off + length]))
        except MetadataError as exc:
            at = off if exc.position is None else off + exc.position
            raise self._fail(f"layer metadata blob {exc.message}", "8.4.8", "blob", at
                             ) from None

    @property
    def embedding_profile(self) -> dict[str, Any] | None:
        md = self.metadata
        prof = md.get("embedding_profile") if md else None
        return prof if isinstance(prof, dict) else None

    # -- zero-copy views ---------------------------------------------------------------
    @cached_property
    def embeddings(self) -> npt.NDArray[np.float32] | npt.NDArray[np.int8]:
        """The embedding matrix as a (rows, dim) view of the mapped file; never a copy."""
        e = self._s.embedding
        dtype = np.dtype("<f4") if e.element_type == L.EMBED_F32 else np.dtype("i1")
        flat = np.frombuffer(self._buf, dtype=dtype, count=e.rows * e.dim, offset=e.data_offset)
        return flat.reshape(e.rows, e.dim)  # type: ignore[return-value]

    @cached_property
    def _raw_records(self) -> np.ndarray:
        return np.frombuffer(self._buf, dtype=L.CHUNK_RECORD_DTYPE, count=self._s.chunk_count,
                             offset=self._s.chunk_records)

    @property
    def records(self) -> np.ndarray:
        """The chunk table as a structured view, after its rules have been checked once."""
        if not self._checked:
            for v in self._record_violations():
                raise v
            self._checked = True
        return self._raw_records

    @cached_property
    def _string_entries(self) -> np.ndarray:
        return np.frombuffer(self._buf, dtype=L.STRING_ENTRY_DTYPE, count=self._s.strings_count,
                             offset=self._s.strings_entries)

    @cached_property
    def _relationships(self) -> np.ndarray:
        return np.frombuffer(self._buf, dtype=L.RELATIONSHIP_DTYPE, count=self._s.rel_count,
                             offset=self._s.rel_records)

    @cached_property
    def ids(self) -> npt.NDArray[np.uint32]:
        return np.asarray(self.records["id"])

    @cached_property
    def rows(self) -> npt.NDArray[np.int64]:
        """0-based embedding row of each chunk, in chunk-table order."""
        return self.records["embedding_row"].astype(np.int64) - 1

    @cached_property
    def id_index(self) -> dict[int, int]:
        """Chunk id -> position in the chunk table."""
        return {int(i): n for n, i in enumerate(self.ids.tolist())}

    def raw_sections(self) -> RawSections:
        """Zero-copy views of every section's payload, for writers that extend the file."""
        s = self._s
        e = s.embedding
        return RawSections(
            entries=self._string_entries,
            blob=memoryview(self._buf)[s.strings_bytes:s.strings_bytes + s.strings_bytes_len],
            records=self.records,
            relationships=self._relationships,
            matrix=memoryview(self._buf)[e.data_offset:e.data_offset + e.data_length],
        )

    # -- decoding ----------------------------------------------------------------------
    def _fail(self, msg: str, rule: str, fld: str, offset: int | None) -> FormatError:
        return FormatError(msg, rule=rule, field=fld, offset=offset, path=self.path)

    def string(self, sid: int) -> str:
        """Decode string ``sid`` (1-based, RFC 8.4.4).

        Up to :data:`STRING_CACHE` decoded strings are kept: the kinds, authors and sources
        that every hit repeats are among the first asked for, while a long-running server
        reading a million chunk contents must not keep them all.
        """
        cached = self._strings.get(sid)
        if cached is not None:
            return cached
        if not 1 <= sid <= self._s.strings_count:
            raise self._fail(f"string id {sid} is outside 1..{self._s.strings_count}",
                             "8.4.4", "string_id", None)
        off, length = self._string_entries[sid - 1].item()
        return self._decode(sid, off, length)

    def _decode(self, sid: int, off: int, length: int) -> str:
        blob_len = self._s.strings_bytes_len
        if off > blob_len or length > blob_len - off:
            raise self._fail(f"string {sid} spans {off}..{off + length}, beyond the "
                             f"{blob_len}-byte blob", "8.4.4", "StringEntry.byte_offset",
                             self._s.strings_entries + (sid - 1) * 16)
        start = self._s.strings_bytes + off
        try:
            text = str(self._buf[start:start + length], "utf-8")
        except UnicodeDecodeError as exc:
            raise self._fail(f"string {sid} is not valid UTF-8", "8.4.4", "string bytes",
                             start + exc.start) from exc
        if len(self._strings) < STRING_CACHE:
            self._strings[sid] = text
        return text

    def _sources(self, start: int, count: int) -> tuple[Source, ...]:
        if count == 0:
            return ()
        out: list[Source] = []
        for kind, value in self._relationships[start:start + count].tolist():
            if kind == L.REL_SOURCE_CHUNK_ID:
                out.append(int(value))
            elif kind == L.REL_SOURCE_STRING:
                out.append(self.string(int(value)))
        return tuple(out)

    def chunk_at(self, index: int) -> Chunk:
        """The chunk at position ``index`` of the chunk table.

        The record is read as one tuple (``.item()``): indexing fields of a numpy record
        one by one costs a microsecond each, which adds up on every search result.
        """
        (cid, kind, content, author, confidence, created, _row, _r0, rel_start, rel_count,
         _r1) = self.records[index].item()
        return Chunk(
            id=cid,
            kind=self.string(kind),
            content=self.string(content),
            author=self.string(author),
            confidence=confidence,
            created_at_ms=created,
            sources=self._sources(rel_start, rel_count),
        )

    def get(self, chunk_id: int) -> Chunk | None:
        index = self.id_index.get(chunk_id)
        return None if index is None else self.chunk_at(index)

    def chunks_at(self, positions: Sequence[int] | npt.NDArray[np.int64]) -> list[Chunk]:
        """The chunks at ``positions`` of the chunk table, decoded together.

        One read of the records and one of the string table serve the whole page, which
        is what a page of search hits costs; :meth:`chunk_at` per position pays numpy's
        per-call overhead several times for each chunk.
        """
        if len(positions) == 0:
            return []
        recs = self.records[np.asarray(positions, dtype=np.intp)].tolist()
        strings = self._strings
        missing = sorted({sid for r in recs for sid in (r[1], r[2], r[3])
                          if sid not in strings})
        decoded: dict[int, str] = {}
        if missing:
            # ``records`` has checked every string id of the chunk table is in range.
            entries = self._string_entries[np.asarray(missing, dtype=np.intp) - 1].tolist()
            decoded = {sid: self._decode(sid, off, length)
                       for sid, (off, length) in zip(missing, entries, strict=True)}

        def text(sid: int) -> str:
            got = strings.get(sid)
            return got if got is not None else decoded[sid]

        return [Chunk(id=cid, kind=text(kind), content=text(content), author=text(author),
                      confidence=confidence, created_at_ms=created,
                      sources=self._sources(rel_start, rel_count))
                for (cid, kind, content, author, confidence, created, _row, _r0, rel_start,
                     rel_count, _r1) in recs]

    def chunks(self) -> Iterator[Chunk]:
        for i in range(self.chunk_count):
            yield self.chunk_at(i)

    def kind_at(self, index: int) -> str:
        return self.string(int(self.records["kind"][index]))

    def vector(self, index: int) -> npt.NDArray[np.float32]:
        """The dequantised embedding of the chunk at ``index`` (a small copy)."""
        row = np.asarray(self.embeddings[int(self.rows[index])], dtype=np.float32)
        if self._s.embedding.element_type == L.EMBED_I8:
            row = row * np.float32(self.quant_scale)
        return row.copy()

    # -- validation --------------------------------------------------------------------
    def _record_violations(self) -> Iterator[FormatError]:
        """Vectorised checks of every chunk and relationship record (RFC 7.1, 8.4.5-8.4.7).

        They reject what the reference reader rejects when it opens a file: chunk id 0, an
        author other than "human" or "mcp" on any chunk, and relationship records of an
        unknown kind or naming chunk id 0, whether or not a chunk refers to them.
        """
        yield from self._chunk_violations()
        yield from self._relationship_violations()

    def _chunk_violations(self) -> Iterator[FormatError]:
        recs = self._raw_records
        if len(recs) == 0:
            return
        base = self._s.chunk_records
        size = L.CHUNK_RECORD_DTYPE.itemsize
        nstr = self._s.strings_count

        ids = recs["id"]
        i = _first(ids == 0)
        if i is not None:
            yield self._fail(f"chunk record {i} has id 0, which means unset; chunk ids run "
                             f"from 1 to {2**32 - 1}", "8.4.2", "ChunkRecord.id",
                             base + i * size)
        for fld, off in (("kind", 4), ("content", 8), ("author", 12)):
            col = recs[fld]
            i = _first((col == 0) | (col > nstr))
            if i is not None:
                yield self._fail(f"chunk {int(ids[i])}: {fld}_str_id "
                                 f"{int(col[i])} is outside 1..{nstr}", "8.4.5",
                                 f"ChunkRecord.{fld}_str_id", base + i * size + off)
        rows = recs["embedding_row"]
        i = _first((rows == 0) | (rows > self._s.embedding.rows))
        if i is not None:
            yield self._fail(f"chunk {int(ids[i])}: embedding_row {int(rows[i])} is "
                             f"outside 1..{self._s.embedding.rows}", "8.4.6",
                             "ChunkRecord.embedding_row", base + i * size + 28)
        for fld, off in (("reserved0", 32), ("reserved1", 48)):
            i = _first(recs[fld] != 0)
            if i is not None:
                yield self._fail(f"chunk {int(ids[i])}: {fld} is "
                                 f"{int(recs[fld][i])}, must be 0", "8.4.5",
                                 f"ChunkRecord.{fld}", base + i * size + off)
        conf = recs["confidence"]
        i = _first(~((conf >= 0.0) & (conf <= 1.0)))
        if i is not None:
            yield self._fail(f"chunk {int(ids[i])}: confidence {float(conf[i])} is "
                             "outside 0.0..1.0", "7.1", "ChunkRecord.confidence",
                             base + i * size + 16)
        rstart, rcount = recs["rel_start"], recs["rel_count"]
        if not self._s.has_relationships:
            i = _first((rstart != 0) | (rcount != 0))
            if i is not None:
                yield self._fail(f"chunk {int(ids[i])}: rel_start/rel_count must be 0 "
                                 "when there is no relationships section", "8.4.7",
                                 "ChunkRecord.rel_start", base + i * size + 36)
        else:
            total = self._s.rel_count
            end = rstart + rcount.astype(np.uint64)
            i = _first((rcount > 0) & ((rstart > total) | (end > total)))
            if i is not None:
                yield self._fail(f"chunk {int(ids[i])}: relationships "
                                 f"{int(rstart[i])}..{int(end[i])} are outside 0..{total}",
                                 "8.4.7", "ChunkRecord.rel_start", base + i * size + 36)
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        dup = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
        if len(dup):
            i = int(order[dup[0] + 1])
            yield self._fail(f"duplicate chunk id {int(ids[i])}", "8.4.5", "ChunkRecord.id",
                             base + i * size)
        yield from self._author_violations()

    def _author_violations(self) -> Iterator[FormatError]:
        """Every chunk's author is "human" or "mcp" (RFC 7.1, 8.4.5).

        The distinct author string ids are compared with those two words as bytes, all at
        once, so a file with a million distinct author strings costs one vectorised pass.
        """
        recs = self._raw_records
        nstr = self._s.strings_count
        authors = distinct(recs["author"])
        sids = authors[(authors >= 1) & (authors <= nstr)]
        if len(sids) == 0:
            return
        entries = self._string_entries[sids.astype(np.intp) - 1]
        offs, lens = entries["offset"], entries["length"]
        blen = self._s.strings_bytes_len
        inside = (offs <= blen) & (lens <= blen - np.minimum(offs, blen))
        blob = np.frombuffer(self._buf, dtype=np.uint8, count=blen,
                             offset=self._s.strings_bytes)
        ok = np.zeros(len(sids), dtype=bool)
        for word in AUTHORS:
            raw = np.frombuffer(word.encode("ascii"), dtype=np.uint8)
            idx = np.flatnonzero(inside & (lens == len(raw)))
            if len(idx):
                at = offs[idx].astype(np.int64)[:, None] + np.arange(len(raw))
                ok[idx[np.all(blob[at] == raw, axis=1)]] = True
        bad = sids[~ok]
        if len(bad) == 0:
            return
        i = _first(np.isin(recs["author"], bad))
        assert i is not None
        sid = int(recs["author"][i])
        try:
            name = self.string(sid)
        except FormatError as exc:
            yield exc
            return
        yield self._fail(f"chunk {int(recs['id'][i])}: author is {name[:80]!r}, must be "
                         "'human' or 'mcp'", "7.1", "ChunkRecord.author_str_id",
                         self._s.chunk_records + i * L.CHUNK_RECORD_DTYPE.itemsize + 12)

    def _relationship_violations(self) -> Iterator[FormatError]:
        if not (self._s.has_relationships and self._s.rel_count):
            return
        rels = self._relationships
        rel_base = self._s.rel_records
        nstr = self._s.strings_count
        kinds, values = rels["kind"], rels["value"]
        j = _first((kinds != L.REL_SOURCE_CHUNK_ID) & (kinds != L.REL_SOURCE_STRING))
        if j is not None:
            yield self._fail(f"relationship {j}: unknown kind {int(kinds[j])} (1 = source "
                             "chunk id, 2 = source string)", "8.4.7", "RelationshipRecord.kind",
                             rel_base + j * 8)
        j = _first((kinds == L.REL_SOURCE_CHUNK_ID) & (values == 0))
        if j is not None:
            yield self._fail(f"relationship {j}: source chunk id 0, which means unset",
                             "8.4.7", "RelationshipRecord.value_u32", rel_base + j * 8 + 4)
        j = _first((kinds == L.REL_SOURCE_STRING) & ((values == 0) | (values > nstr)))
        if j is not None:
            yield self._fail(f"relationship {j}: string id {int(values[j])} is outside "
                             f"1..{nstr}", "8.4.7", "RelationshipRecord.value_u32",
                             rel_base + j * 8 + 4)

    def iter_violations(self) -> Iterator[FormatError]:
        """Every violation in the file, in file order, including string encoding.

        An empty layer with ``dim`` 0 opens (it holds no vector to misread), but is reported
        here: the reference reader refuses a zero dimension in any layer.
        """
        if self._s.embedding.dim == 0:
            em = next(x for x in self._s.sections if x.kind == L.SECTION_EMBEDDING_MATRIX)
            yield self._fail("dim is 0; the embedding dimension must be non-zero, even in an "
                             "empty layer", "8.4.6", "EmbeddingMatrixHeader.dim", em.offset + 8)
        yield from self._record_violations()
        if self._s.metadata_blob is not None:
            try:
                _ = self.metadata
            except FormatError as exc:
                yield exc
        entries = self._string_entries
        if len(entries):
            blen = self._s.strings_bytes_len
            offs, lens = entries["offset"], entries["length"]
            bad = np.flatnonzero((offs > blen) | (lens > blen - np.minimum(offs, blen)))
            for k in bad[:20].tolist():
                end = int(offs[k]) + int(lens[k])
                yield self._fail(f"string {k + 1} spans {int(offs[k])}..{end}, beyond the "
                                 f"{blen}-byte blob", "8.4.4",
                                 "StringEntry.byte_offset", self._s.strings_entries + k * 16)
            bad_set = set(bad.tolist())
            errors = 0
            for k in range(len(entries)):
                if k in bad_set:
                    continue
                try:
                    self.string(k + 1)
                except FormatError as exc:
                    errors += 1
                    if errors <= 20:
                        yield exc

    def validate(self) -> list[FormatError]:
        return list(self.iter_violations())


"""A layer's BM25 postings persisted beside it: derived, rebuildable, never durable state.

Building postings means analysing every chunk (1.7 s at 100k chunks here), which every
fresh process (each ``sediment search``) used to pay on its first lexical query. So the
postings of a large layer are written once, by ``compile`` or by the first search that
needs them, to ``.<layer file name>.<key16>.<chunks>.<analyzer>.lex`` in the layer's
directory, and later processes map that file instead.

A file covers the first ``chunks`` chunks of the layer, all of them or a prefix. An append
keeps every existing chunk record and string in place, so the lexicon of a layer before an
append still describes the first chunks of the layer after it: search maps it and analyses
only the chunks appended since, in memory (``load_postings`` returns both parts, whose
statistics add up like those of two layers). A store that writes on every agent turn thus
never rebuilds nor rewrites its lexicon per write; the file is rebuilt for the whole layer
only when the appended tail grows past :func:`tail_limit` (an eighth of the layer), so the
tail analysed per new version stays small and a rebuild comes once per many appends.

The key is :func:`prefix_key`, a digest of what the postings of the first ``chunks``
chunks are computed from: their content column, and the string dictionary up to the
largest string id it names (entries and bytes), through CRC-32 in 16 MiB blocks whose
values are hashed with BLAKE2b (memory speed: 6 to 12 ms for the 27 MB of text of a
100k-chunk layer here, against seconds to rebuild). A layer whose text changed stops
matching; a vector-only change does not matter. As with the approximate index, CRC-32
detects any accidental change and is not meant to resist a forger: whoever can rewrite the
directory can rewrite the layer too.

A file is used only after :func:`open_postings` has checked it: magic, version, key,
analyzer and chunk count as expected, every array inside the file and the file exactly as
long as they say, a CRC-32 of everything after the header, offsets that only grow and end
where they must, and every posting naming a chunk of the prefix. Anything else (a
truncated, stale, foreign or hostile file) is ignored with a log line, and the postings are
rebuilt and rewritten: a broken cache costs time, never a wrong search or a crash. Files
are written through ``store.atomic.atomic_write`` (readers see no file or a whole one), and
a new file replaces the layer's other lexicon files of its analyzer.

Layout (little-endian): a 96-byte header (magic ``SEDLEX``, version, key, analyzer, counts,
CRC), then 8-byte aligned arrays: document lengths (u32), term offsets (u64), posting
offsets (u64), posting documents (u32), term frequencies (u16), the sorted term bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import mmap
import os
import re
import stat
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sediment.errors import SedimentError
from sediment.format import LayerFile
from sediment.search.analysis import DEFAULT_ANALYZER
from sediment.search.bm25 import Postings, PostingsStack
from sediment.store.atomic import atomic_write

log = logging.getLogger(__name__)

PERSIST_MIN_CHUNKS = 5000
"""Layers with fewer chunks are indexed in memory only: they rebuild in under about 0.1 s,
and a small layer is often an agent's local layer that changes on every write."""
TAIL_MIN = 256
"""Chunks appended after a layer's lexicon that are always analysed in memory rather than
trigger a rebuild (see :func:`tail_limit`)."""
SUFFIX = ".lex"
MAGIC = b"SEDLEX\x00\x00"
VERSION = 1
BLOCK = 16 << 20
_HEADER = struct.Struct("<8sI16s16sQQQQQI8x")  # magic, version, key, analyzer, counts, crc
assert _HEADER.size == 96
_NAME = re.compile(r"\.(?P<key>[0-9a-f]{16})(?:\.(?P<docs>[0-9]{1,10}))?"
                   r"\.(?P<analyzer>[a-z0-9_]{1,16})" + re.escape(SUFFIX) + "$")
"""Names without a chunk count are those of the previous version (whole layers only):
never used, only cleaned up."""


class LexiconError(ValueError):
    """The file is not a lexicon this version writes for this layer."""


def prefix_key(f: LayerFile, docs: int) -> str:
    """32 hex digits identifying the text of the first ``docs`` chunks of ``f``, in
    chunk-table order: the same for the layer before and after an append."""
    if not 0 <= docs <= f.chunk_count:
        raise ValueError(f"{docs} chunks asked of a layer of {f.chunk_count}")
    raw = f.raw_sections()
    content = np.ascontiguousarray(raw.records["content"][:docs])
    top = min(int(content.max()) if docs else 0, len(raw.entries))
    entries = np.ascontiguousarray(raw.entries[:top])
    ends = (entries["offset"].astype(np.int64) + entries["length"].astype(np.int64)
            if top else np.zeros(1, dtype=np.int64))
    blob = raw.blob[:max(0, min(int(ends.max()), len(raw.blob)))]
    h = hashlib.blake2b(digest_size=16, person=b"sediment-lex-v2")
    h.update(struct.pack("<QQ", docs, top))
    parts: tuple[memoryview, ...] = (content.view(np.uint8).data, entries.view(np.uint8).data,
                                     blob)
    for part in parts:
        view = part.cast("B")
        h.update(len(view).to_bytes(8, "little"))
        for at in range(0, len(view), BLOCK):
            h.update(zlib.crc32(view[at:at + BLOCK]).to_bytes(4, "little"))
    return h.hexdigest()


def tail_limit(docs: int) -> int:
    """Most chunks appended after a lexicon of ``docs`` chunks that are analysed in memory
    on top of it; past that, the whole layer's lexicon is rebuilt and rewritten."""
    return max(TAIL_MIN, docs // 8)


def lexicon_path(layer_path: str | os.PathLike[str], key: str, analyzer_name: str,
                 docs: int) -> Path:
    p = Path(layer_path)
    return p.with_name(f".{p.name}.{key[:16]}.{docs}.{analyzer_name}{SUFFIX}")


@dataclass(frozen=True, slots=True)
class LexiconFile:
    """A lexicon file found beside a layer, as its name describes it (``docs`` None: a
    name of the previous version, never used)."""

    path: Path
    key16: str
    analyzer: str
    docs: int | None


def lexicon_files(layer_path: str | os.PathLike[str]) -> list[LexiconFile]:
    """The lexicon files beside ``layer_path`` (by name; nothing is read)."""
    p = Path(layer_path)
    found = []
    for x in sorted(p.parent.glob(f".{p.name}.*{SUFFIX}")):
        m = _NAME.fullmatch(x.name[len(p.name) + 1:])
        if m is not None:
            docs = None if m["docs"] is None else int(m["docs"])
            found.append(LexiconFile(x, m["key"], m["analyzer"], docs))
    return found


def _arrays(n_docs: int, n_terms: int, n_post: int, blob_len: int
            ) -> tuple[list[tuple[str, np.dtype[np.generic], int, int]], int]:
    """(name, dtype, offset, count) of each array after the header, and the file size."""
    spec: list[tuple[str, np.dtype[np.generic], int]] = [
        ("doc_len", np.dtype("<u4"), n_docs), ("term_offsets", np.dtype("<u8"), n_terms + 1),
        ("offsets", np.dtype("<u8"), n_terms + 1), ("docs", np.dtype("<u4"), n_post),
        ("tf", np.dtype("<u2"), n_post), ("term_blob", np.dtype("u1"), blob_len)]
    out: list[tuple[str, np.dtype[np.generic], int, int]] = []
    at = _HEADER.size
    for name, dtype, count in spec:
        at = -(-at // 8) * 8
        out.append((name, dtype, at, count))
        at += count * dtype.itemsize
    return out, at


def encode(p: Postings, key: str) -> bytes:
    layout, size = _arrays(p.n_docs, p.n_terms, len(p.docs), len(p.term_blob))
    values = {"doc_len": p.doc_len, "term_offsets": p.term_offsets, "offsets": p.offsets,
              "docs": p.docs, "tf": p.tf,
              "term_blob": np.frombuffer(bytes(p.term_blob), dtype=np.uint8)}
    buf = bytearray(size)
    for name, dtype, at, count in layout:
        arr = np.ascontiguousarray(values[name], dtype=dtype)
        assert len(arr) == count
        buf[at:at + arr.nbytes] = arr.tobytes()
    crc = _crc(memoryview(buf)[_HEADER.size:])
    buf[:_HEADER.size] = _HEADER.pack(MAGIC, VERSION, bytes.fromhex(key),
                                      p.analyzer.encode("ascii"), p.n_docs, p.n_terms,
                                      len(p.docs), len(p.term_blob), p.total_len, crc)
    return bytes(buf)


def _crc(view: memoryview) -> int:
    crc = 0
    for at in range(0, len(view), BLOCK):
        crc = zlib.crc32(view[at:at + BLOCK], crc)
    return crc


def decode(buf: mmap.mmap | bytes, key: str, analyzer_name: str, n_docs: int) -> Postings:
    """Postings from ``buf`` after every check the module docstring lists."""
    if len(buf) < _HEADER.size:
        raise LexiconError(f"{len(buf)} bytes, shorter than the {_HEADER.size}-byte header")
    magic, version, fkey, fanalyzer, docs_n, n_terms, n_post, blob_len, total_len, crc = \
        _HEADER.unpack_from(buf, 0)
    if magic != MAGIC or version != VERSION:
        raise LexiconError(f"not a version {VERSION} lexicon (magic {magic!r}, "
                           f"version {version})")
    if fkey != bytes.fromhex(key) or fanalyzer.rstrip(b"\0") != analyzer_name.encode():
        raise LexiconError("built from another version of the layer or another analyzer")
    if docs_n != n_docs:
        raise LexiconError(f"indexes {docs_n} chunks, the layer has {n_docs}")
    if max(n_terms, n_post, blob_len) > len(buf):
        raise LexiconError("declares more entries than the file has bytes")
    layout, size = _arrays(docs_n, n_terms, n_post, blob_len)
    if size != len(buf):
        raise LexiconError(f"is {len(buf)} bytes; its counts say {size}")
    view = memoryview(buf)
    if _crc(view[_HEADER.size:]) != crc:
        raise LexiconError("checksum mismatch")
    a = {name: np.frombuffer(buf, dtype=dtype, count=count, offset=at)
         for name, dtype, at, count in layout}
    for name, end in (("term_offsets", blob_len), ("offsets", n_post)):
        off = a[name]
        if int(off[0]) != 0 or int(off[-1]) != end or bool(np.any(off[1:] < off[:-1])):
            raise LexiconError(f"{name} do not rise from 0 to {end}")
    if n_post and int(a["docs"].max()) >= docs_n:
        raise LexiconError("a posting names a chunk the layer does not have")
    if int(a["doc_len"].sum(dtype=np.uint64)) != total_len:
        raise LexiconError("document lengths do not add up to the total length")
    blob_at = layout[-1][2]
    return Postings(analyzer_name, a["doc_len"], total_len,
                    view[blob_at:blob_at + blob_len], a["term_offsets"], a["offsets"],
                    a["docs"], a["tf"])


def open_postings(path: Path, key: str, analyzer_name: str, n_docs: int) -> Postings | None:
    """The postings in ``path`` if it passes every check; None (and a log line) otherwise."""
    try:
        with path.open("rb") as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                raise LexiconError("empty file")
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        return decode(mm, key, analyzer_name, n_docs)
    except FileNotFoundError:
        return None
    except Exception as exc:  # a cache must never fail a search, whatever it holds
        log.warning("ignoring lexicon %s (%s); rebuilding it", path, exc)
        return None


def write_postings(f: LayerFile, p: Postings, key: str) -> Path | None:
    """Persist ``p`` (the postings of every chunk of ``f``) beside ``f`` and remove the
    layer's other lexicon files of the same analyzer; None when the directory cannot be
    written (the postings still serve)."""
    if f.path is None:
        return None
    out = lexicon_path(f.path, key, p.analyzer, p.n_docs)
    try:
        atomic_write(out, encode(p, key), mode=stat.S_IMODE(os.stat(f.path).st_mode) & 0o666)
    except (OSError, SedimentError) as exc:
        log.info("could not write lexicon %s (%s); it stays in memory", out, exc)
        return None
    for old in lexicon_files(f.path):
        if old.path != out and old.analyzer == p.analyzer:
            with contextlib.suppress(OSError):
                old.path.unlink()
    return out


def persisted(f: LayerFile) -> bool:
    """Whether ``f``'s postings are worth a file (a large enough layer with a path)."""
    return f.path is not None and f.chunk_count >= PERSIST_MIN_CHUNKS


Keys = dict[int, str]
""":func:`prefix_key` by chunk count, for one file version (computed once each)."""


def _key(f: LayerFile, docs: int, keys: Keys) -> str:
    if docs not in keys:
        keys[docs] = prefix_key(f, docs)
    return keys[docs]


def find_lexicon(f: LayerFile, analyzer_name: str, keys: Keys | None = None
                 ) -> tuple[Path, Postings] | None:
    """The file covering the most leading chunks of ``f`` (within :func:`tail_limit` of
    all of them) that passes every check, with its postings; None when there is none."""
    if f.path is None:
        return None
    keys = {} if keys is None else keys
    n = f.chunk_count
    usable = sorted((x for x in lexicon_files(f.path) if x.analyzer == analyzer_name
                     and x.docs is not None and 0 < x.docs <= n
                     and n - x.docs <= tail_limit(x.docs)), key=lambda x: -(x.docs or 0))
    for x in usable:
        assert x.docs is not None
        key = _key(f, x.docs, keys)
        if key[:16] != x.key16:
            continue
        found = open_postings(x.path, key, analyzer_name, x.docs)
        if found is not None:
            return x.path, found
    return None


def load_postings(f: LayerFile, analyzer_name: str, keys: Keys | None = None
                  ) -> PostingsStack:
    """``f``'s postings for ``analyzer_name``: from its lexicon file when one matches all
    of it or a prefix (the chunks after the prefix analysed in memory), else built (and,
    for a large layer, persisted for the next process and the next versions)."""
    if not persisted(f):
        return PostingsStack([_build(f, analyzer_name)])
    keys = {} if keys is None else keys
    found = find_lexicon(f, analyzer_name, keys)
    if found is not None:
        prefix = found[1]
        if prefix.n_docs == f.chunk_count:
            return PostingsStack([prefix])
        return PostingsStack([prefix, _build(f, analyzer_name, prefix.n_docs)])
    built = _build(f, analyzer_name)
    write_postings(f, built, _key(f, f.chunk_count, keys))
    return PostingsStack([built])


def ensure_lexicon(layer_path: str | os.PathLike[str], analyzer_name: str | None = None
                   ) -> Path | None:
    """Write the lexicon of the whole layer at ``layer_path`` unless a valid one exists;
    None when the layer is too small to need one (``compile`` calls this)."""
    f = LayerFile.open(layer_path)
    if not persisted(f):
        return None
    name = analyzer_name or DEFAULT_ANALYZER
    keys: Keys = {}
    found = find_lexicon(f, name, keys)
    if found is not None and found[1].n_docs == f.chunk_count:
        return found[0]
    return write_postings(f, _build(f, name), _key(f, f.chunk_count, keys))


def stale_lexicons(f: LayerFile) -> list[Path]:
    """Lexicon files beside ``f`` that a search of it would not use."""
    if f.path is None:
        return []
    files = lexicon_files(f.path)
    keep: set[Path] = set()
    keys: Keys = {}
    for name in sorted({x.analyzer for x in files}):
        found = find_lexicon(f, name, keys)
        if found is not None:
            keep.add(found[0])
    return [x.path for x in files if x.path not in keep]


def _build(f: LayerFile, analyzer_name: str, start: int = 0) -> Postings:
    contents = f.records["content"][start:].tolist()
    return Postings.build((f.string(int(s)) for s in contents), analyzer_name)


def clean_lexicons(layer_path: str | os.PathLike[str], *, remove_all: bool = False
                   ) -> list[Path]:
    """Remove the lexicon files a search of the layer would not use (with ``remove_all``,
    every lexicon beside it); return those removed. A layer that cannot be read keeps
    none."""
    if remove_all:
        doomed = [x.path for x in lexicon_files(layer_path)]
    else:
        try:
            doomed = stale_lexicons(LayerFile.open(layer_path))
        except SedimentError:
            doomed = [x.path for x in lexicon_files(layer_path)]
    removed = []
    for old in doomed:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()
            removed.append(old)
    return removed

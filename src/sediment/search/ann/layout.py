"""Check an index file's structure before FAISS reads it.

FAISS's reader trusts the sizes a file declares: it allocates (and zero-fills) each vector
before reading it, so a crafted list size can make it take gigabytes, and it does not check
graph links or row ids, so a crafted link can make a search read out of bounds. A layer's
index is a cache any writer of its directory can replace, and a search must never be taken
down by one. So the file is walked here first, for exactly the structure :mod:`index`
writes (an ``IndexIVFScalarQuantizer`` over 8-bit codes whose list centres sit in an
``IndexHNSWFlat``, FAISS's ``IwSq`` / ``IHNf`` / ``IxFI`` / ``ilar`` records), and refused
unless every declared size fits in the bytes that follow it, the whole file is consumed,
every graph link names a centre and every row id names a row of the layer. The walk reads
the small fields, the graph links and the row ids (8 bytes a row); it never reads the
codes.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

import numpy as np
import numpy.typing as npt

METRIC_INNER_PRODUCT = 0
QT_8BIT = 0
MAX_LEVELS = 16
"""Levels an HNSW graph over the centres may declare (FAISS stops at probability 1e-9:
7 levels for 32 links a node)."""
MAX_LINKS = 64
"""Links a centre may declare per upper level (index.CENTRE_LINKS is 32)."""


class LayoutError(ValueError):
    """The file is not an index this version writes, or declares more than it holds."""


class _Walk:
    def __init__(self, buf: memoryview) -> None:
        self.buf = buf
        self.at = 0

    def fail(self, what: str) -> LayoutError:
        return LayoutError(f"{what} at byte {self.at}")

    def take(self, size: int, what: str) -> memoryview:
        if size < 0 or size > len(self.buf) - self.at:
            raise self.fail(f"{what} needs {size} bytes but {len(self.buf) - self.at} remain")
        got = self.buf[self.at:self.at + size]
        self.at += size
        return got

    def unpack(self, fmt: str, what: str) -> int | float:
        value: int | float = struct.unpack("<" + fmt, self.take(struct.calcsize(fmt), what))[0]
        return value

    def number(self, fmt: str, what: str) -> int:
        value = self.unpack(fmt, what)
        assert isinstance(value, int)
        return value

    def fourcc(self, want: str) -> None:
        got = bytes(self.take(4, "a record tag"))
        if got != want.encode():
            raise LayoutError(f"expected a {want!r} record at byte {self.at - 4}, found {got!r}")

    def vector(self, item: int, what: str) -> memoryview:
        """A FAISS vector: its length (a uint64), then that many items."""
        count = self.number("Q", f"the length of {what}")
        left = len(self.buf) - self.at
        if count > left // item:
            raise self.fail(f"{what} declares {count} items of {item} bytes, more than the "
                            f"{left} bytes left")
        return self.take(count * item, what)

    def header(self, dim: int, count: int, what: str) -> None:
        """FAISS's common index header: dims, vectors, two unused words, trained, metric."""
        d = self.number("i", f"{what} dims")
        total = self.number("q", f"{what} size")
        self.take(16, f"{what} header")
        trained = self.number("B", f"{what} trained flag")
        metric = self.number("i", f"{what} metric")
        if d != dim or total != count or trained != 1 or metric != METRIC_INNER_PRODUCT:
            raise self.fail(f"{what} holds {total} trained={trained} vectors of {d} dims with "
                            f"metric {metric}, expected {count} trained inner-product "
                            f"vectors of {dim}")


def _ints(view: memoryview, dtype: str) -> npt.NDArray[np.int64]:
    return np.frombuffer(view, dtype=dtype).astype(np.int64)


def check(path: Path, rows: int, dim: int) -> None:
    """Raise :class:`LayoutError` unless ``path`` is an inverted file over ``rows`` rows
    of ``dim`` dims whose every size, link and id is in range."""
    with open(path, "rb") as fh:
        if fh.seek(0, 2) == 0:
            raise LayoutError("the file is empty")
        # Not closed explicitly: views of it may live on in an exception's frames; the map
        # goes when the last of them does.
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    _check(_Walk(memoryview(mm)), rows, dim)


def _check(w: _Walk, rows: int, dim: int) -> None:
    w.fourcc("IwSq")
    w.header(dim, rows, "the index")
    lists = w.number("Q", "the list count")
    w.number("Q", "the default nprobe")
    if not 1 <= lists <= max(1, rows // 39):  # index.list_count never makes more
        raise w.fail(f"{lists} lists for {rows} rows")
    _centres(w, lists, dim)
    direct = w.number("B", "the direct-map type")
    if direct != 0 or len(w.vector(8, "the direct map")) != 0:
        raise w.fail("a direct map is present; this version never writes one")
    qtype = w.number("i", "the quantiser type")
    w.number("i", "the quantiser range statistic")
    w.take(4, "the quantiser range argument")
    sq_dim = w.number("Q", "the quantiser dims")
    sq_code = w.number("Q", "the quantiser code size")
    trained = w.vector(4, "the quantiser ranges")
    code_size = w.number("Q", "the code size")
    if w.number("B", "the residual flag") > 1:
        raise w.fail("the residual flag is neither 0 nor 1")
    if (qtype, sq_dim, sq_code, code_size, len(trained)) != (QT_8BIT, dim, dim, dim, 8 * dim):
        raise w.fail(f"quantiser type {qtype}, {sq_dim} dims, codes of {sq_code} / "
                     f"{code_size} bytes, {len(trained) // 4} range values: not 8-bit codes "
                     f"of {dim} dims")
    _lists(w, lists, code_size, rows)


def _centres(w: _Walk, lists: int, dim: int) -> None:
    """The HNSW graph over the list centres, and the centres themselves.

    Every table's length is bounded before it is converted (a sparse file can declare
    gigabytes it does not hold on disk), and every link must name a centre that has the
    level the link is on: FAISS follows a link and reads the target's links at that level
    without checking the target has it."""
    w.fourcc("IHNf")
    w.header(dim, lists, "the centre graph")
    probas = w.vector(8, "the level probabilities")
    cum_raw = w.vector(4, "the links per level")
    levels_raw = w.vector(4, "the centre levels")
    offsets_raw = w.vector(8, "the link offsets")
    links_raw = w.vector(4, "the links")
    entry = w.number("i", "the entry point")
    top = w.number("i", "the top level")
    w.take(12, "the graph's search settings")
    n_levels = len(probas) // 8
    if not 1 <= n_levels <= MAX_LEVELS or len(cum_raw) != 4 * (n_levels + 1):
        raise w.fail(f"the centre graph declares {n_levels} levels and "
                     f"{len(cum_raw) // 4} link counts (at most {MAX_LEVELS} levels, one "
                     "count more than levels)")
    cum = _ints(cum_raw, "<i4")
    m = int(cum[1]) // 2
    if not 1 <= m <= MAX_LINKS or not np.array_equal(
            cum, np.array([0, *(2 * m + i * m for i in range(n_levels))])):
        raise w.fail("the centre graph's links per level are not those of an HNSW graph "
                     f"with at most {MAX_LINKS} links a node")
    if len(levels_raw) != 4 * lists or len(offsets_raw) != 8 * (lists + 1):
        raise w.fail("the centre graph's level tables do not match its centres")
    levels = _ints(levels_raw, "<i4")
    offsets = _ints(offsets_raw, "<u8")
    n_links = len(links_raw) // 4
    if (np.any(levels < 1) or np.any(levels > n_levels) or not 0 <= top < n_levels
            or int(levels.max()) != top + 1 or not 0 <= entry < lists
            or levels[entry] != top + 1):
        raise w.fail("the centre graph's levels or entry point are out of range")
    if (offsets[0] != 0 or offsets[-1] != n_links
            or np.any(np.diff(offsets) != cum[levels])):
        raise w.fail("the centre graph's link offsets do not match its levels")
    linked = _ints(links_raw, "<i4")
    if np.any((linked < -1) | (linked >= lists)):
        raise w.fail("a centre graph link names no centre")
    owner = np.repeat(np.arange(lists), np.diff(offsets))
    level = np.searchsorted(cum, np.arange(n_links) - offsets[owner], side="right") - 1
    if np.any((linked >= 0) & (levels[np.maximum(linked, 0)] <= level)):
        raise w.fail("a centre graph link names a centre that is not on the link's level")
    w.fourcc("IxFI")
    w.header(dim, lists, "the centre store")
    floats = w.number("Q", "the centre store length")
    if floats != lists * dim:
        raise w.fail(f"the centre store holds {floats} floats, expected {lists * dim}")
    w.take(4 * floats, "the centres")


def _lists(w: _Walk, lists: int, code_size: int, rows: int) -> None:
    """The inverted lists: every row once, codes and ids exactly filling the file. FAISS
    writes the sizes of every list (``full``) or, when most lists are empty, (list,
    size) pairs of the others (``sprs``)."""
    w.fourcc("ilar")
    if (w.number("Q", "the list count"), w.number("Q", "the code size")) != (lists, code_size):
        raise w.fail("the inverted lists disagree with the index on list count or code size")
    layout = bytes(w.take(4, "the list-size layout"))
    raw = w.vector(8, "the list sizes")
    if layout == b"full" and len(raw) == 8 * lists:
        sizes = _ints(raw, "<u8")
    elif layout == b"sprs" and len(raw) % 16 == 0 and len(raw) <= 16 * lists:
        pairs = _ints(raw, "<u8").reshape(-1, 2)
        which = pairs[:, 0]
        if (np.any(which < 0) or np.any(which >= lists)
                or len(np.unique(which)) != len(which)):
            raise w.fail("the sparse list sizes name a list twice or one that does not exist")
        sizes = np.zeros(lists, dtype=np.int64)
        sizes[which] = pairs[:, 1]
    else:
        raise w.fail(f"list sizes laid out as {layout!r} with {len(raw) // 8} values, "
                     f"expected 'full' with {lists} or 'sprs' with pairs")
    if np.any(sizes < 0) or np.any(sizes > rows) or int(sizes.sum()) != rows:
        raise w.fail(f"the list sizes do not add up to the {rows} rows")
    body = w.take(len(w.buf) - w.at, "the lists")
    if len(body) != rows * (code_size + 8):
        w.at -= len(body)
        raise w.fail(f"the lists need {rows * (code_size + 8)} bytes, the file has "
                     f"{len(body)} left")
    seen = np.zeros(rows, dtype=np.bool_)
    at = 0
    for n in sizes.tolist():
        at += n * code_size
        ids = np.frombuffer(body[at:at + 8 * n], dtype="<i8")
        at += 8 * n
        if n and (int(ids.min()) < 0 or int(ids.max()) >= rows):
            raise LayoutError(f"a list names a row outside 0..{rows - 1}")
        seen[ids] = True
    if not seen.all():
        raise LayoutError("some rows are in no list")

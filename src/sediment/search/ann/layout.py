"""Check an index file's structure before FAISS reads it.

FAISS's reader trusts the sizes a file declares: it allocates (and zero-fills) each vector
before reading it, so a crafted size can make it take gigabytes, and it does not check graph
links, so a crafted link can make a search read out of bounds. A layer's index is a cache
any writer of its directory can replace, and a search must never be taken down by one. So
the file is walked here first, for exactly the structure :mod:`index` writes (an
``IndexHNSWSQ``: an HNSW graph over the rows whose vectors are 8-bit codes, FAISS's
``IHNs`` record holding the graph and an ``IxSQ`` record holding the codes), and refused
unless every declared size fits in the bytes that follow it, the whole file is consumed,
the graph has one node per row of the layer and every link names a node that has the
link's level. The walk reads the small fields and the graph; it never reads the codes.
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
"""Levels a graph may declare (FAISS stops at probability 1e-9: 8 levels for 16 links a
node, 6 for 32)."""
MAX_LINKS = 64
"""Links a node may declare per upper level (index.LINKS is far below)."""
LINK_BLOCK = 1 << 22
"""Links range-checked per step, so the check's own memory stays small at any size."""


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

    def number(self, fmt: str, what: str) -> int:
        value = struct.unpack("<" + fmt, self.take(struct.calcsize(fmt), what))[0]
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


def check(path: Path, rows: int, dim: int) -> None:
    """Raise :class:`LayoutError` unless ``path`` is an HNSW graph over ``rows`` rows of
    ``dim`` dims in 8-bit codes whose every size and link is in range."""
    with open(path, "rb") as fh:
        if fh.seek(0, 2) == 0:
            raise LayoutError("the file is empty")
        # Not closed explicitly: views of it may live on in an exception's frames; the map
        # goes when the last of them does.
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    _check(_Walk(memoryview(mm)), rows, dim)


def _check(w: _Walk, rows: int, dim: int) -> None:
    w.fourcc("IHNs")
    w.header(dim, rows, "the index")
    _graph(w, rows)
    w.fourcc("IxSQ")
    w.header(dim, rows, "the code store")
    qtype = w.number("i", "the quantiser type")
    w.number("i", "the quantiser range statistic")
    w.take(4, "the quantiser range argument")
    sq_dim = w.number("Q", "the quantiser dims")
    sq_code = w.number("Q", "the quantiser code size")
    trained = w.vector(4, "the quantiser ranges")
    if (qtype, sq_dim, sq_code, len(trained)) != (QT_8BIT, dim, dim, 8 * dim):
        raise w.fail(f"quantiser type {qtype}, {sq_dim} dims, codes of {sq_code} bytes, "
                     f"{len(trained) // 4} range values: not 8-bit codes of {dim} dims")
    codes = w.vector(1, "the codes")
    if len(codes) != rows * dim:
        raise w.fail(f"the code store holds {len(codes)} bytes, expected {rows * dim}")
    if w.at != len(w.buf):
        raise w.fail(f"{len(w.buf) - w.at} bytes follow the index")


def _ints(view: memoryview, dtype: str) -> npt.NDArray[np.int64]:
    return np.frombuffer(view, dtype=dtype).astype(np.int64)


def _graph(w: _Walk, nodes: int) -> None:
    """The HNSW graph: one node per row, links per level as FAISS lays them out.

    Every table's length is bounded before it is converted (a sparse file can declare
    gigabytes it does not hold on disk), and every link must name a node that has the
    level the link is on: FAISS follows a link and reads the target's links at that level
    without checking the target has it. Every node has level 0, so level-0 links (nearly
    all of them) need only a range check, done in blocks; upper-level links are few."""
    probas = w.vector(8, "the level probabilities")
    cum_raw = w.vector(4, "the links per level")
    levels_raw = w.vector(4, "the node levels")
    offsets_raw = w.vector(8, "the link offsets")
    links_raw = w.vector(4, "the links")
    entry = w.number("i", "the entry point")
    top = w.number("i", "the top level")
    w.take(12, "the graph's search settings")
    n_levels = len(probas) // 8
    if not 1 <= n_levels <= MAX_LEVELS or len(cum_raw) != 4 * (n_levels + 1):
        raise w.fail(f"the graph declares {n_levels} levels and {len(cum_raw) // 4} link "
                     f"counts (at most {MAX_LEVELS} levels, one count more than levels)")
    cum = _ints(cum_raw, "<i4")
    m = int(cum[1]) // 2
    if not 1 <= m <= MAX_LINKS or not np.array_equal(
            cum, np.array([0, *(2 * m + i * m for i in range(n_levels))])):
        raise w.fail("the graph's links per level are not those of an HNSW graph with at "
                     f"most {MAX_LINKS} links a node")
    if len(levels_raw) != 4 * nodes or len(offsets_raw) != 8 * (nodes + 1):
        raise w.fail(f"the graph's level tables do not have one entry per row ({nodes})")
    levels = _ints(levels_raw, "<i4")
    offsets = _ints(offsets_raw, "<u8")
    n_links = len(links_raw) // 4
    if (np.any(levels < 1) or np.any(levels > n_levels) or not 0 <= top < n_levels
            or int(levels.max()) != top + 1 or not 0 <= entry < nodes
            or levels[entry] != top + 1):
        raise w.fail("the graph's levels or entry point are out of range")
    if (offsets[0] != 0 or offsets[-1] != n_links
            or np.any(np.diff(offsets) != cum[levels])):
        raise w.fail("the graph's link offsets do not match its levels")
    linked = np.frombuffer(links_raw, dtype="<i4")
    for at in range(0, n_links, LINK_BLOCK):
        part = linked[at:at + LINK_BLOCK]
        if np.any((part < -1) | (part >= nodes)):
            raise w.fail("a graph link names no row")
    upper = np.flatnonzero(levels > 1)
    if len(upper):
        counts = cum[levels[upper]] - cum[1]
        owner = np.repeat(upper, counts)
        skip = np.repeat(offsets[upper] + cum[1] - np.cumsum(counts) + counts, counts)
        where = np.arange(int(counts.sum()), dtype=np.int64) + skip
        level = np.searchsorted(cum, where - offsets[owner], side="right") - 1
        target = linked[where].astype(np.int64)
        if np.any((target >= 0) & (levels[np.maximum(target, 0)] <= level)):
            raise w.fail("a graph link names a row that is not on the link's level")

"""An HNSW index beside a large layer: derived, rebuildable, never durable state.

File: ``.<layer file name>.<key16>.<rows>.<metric>.usearch`` in the layer's directory, where
key16 starts :func:`~sediment.search.ann.key.rows_key` of the first ``rows`` embedding rows.
A layer whose rows change stops matching its index; a layer that only grew (an append keeps
the existing rows in place) still matches an index of its first ``rows`` rows, which search
uses for those rows while it scans the appended tail exactly, and which ``build_index``
extends with the tail instead of starting again. Nothing is ever written inside the ``.db``
file (RFC 11.2 keeps durable state there; this is a cache).

Built with usearch (HNSW; wheels for every major platform, only numpy as a Python
dependency). Unit-length layers (``ip`` metric) are indexed as int8, scaled so that the
largest component is 127; others (``cos``) as f16. The index only proposes candidates,
which the engine re-scores exactly from the layer's own matrix, so storage precision costs
no final accuracy. Parameters: connectivity (HNSW "M") 16, expansion 128 when adding,
:data:`EXPANSION_SEARCH` when searching (``SearchRequest.ann_expansion`` overrides it), and
at least :data:`MIN_FETCH` candidates re-scored exactly; docs/peers.md has the sweep of
recall against latency these were chosen from.

Any problem reading an index (missing, truncated, garbage, wrong size) makes
:func:`find_index` return None and the engine scans exactly: a broken cache never fails a
search.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from sediment.format import LayerFile
from sediment.search.ann.key import rows_key

log = logging.getLogger(__name__)

ANN_MIN_ROWS = 100_000
"""Layers with fewer rows are always scanned exactly (see docs/peers.md for why)."""
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 192
"""Default search breadth: the lowest of the sweep in docs/peers.md whose recall@10 stays
clear of 0.95 at 1M rows (128 gave 0.955 there, 192 gave 0.966)."""
MIN_FETCH = 32
"""Fewest candidates asked of the index; all are re-scored exactly, so asking for more than
k repairs the graph's near misses."""
MAX_FETCH = 4096
"""Most candidates asked of the index; a filter that needs more falls back to exact."""
SUFFIX = ".usearch"
ADD_BLOCK = 65536

AnnMetric = Literal["ip", "cos"]
Progress = Callable[[int, int], None]
_NAME = re.compile(r"\.(?P<key>[0-9a-f]{16})\.(?P<rows>[0-9]+)\.(?P<metric>ip|cos)"
                   + re.escape(SUFFIX) + "$")


def eligible(rows: int) -> bool:
    """Whether a layer of ``rows`` rows is large enough to be searched approximately."""
    return rows >= max(ANN_MIN_ROWS, 1)


def index_metric(f: LayerFile) -> AnnMetric:
    """``ip`` for layers of unit-length vectors (cosine = dot), else ``cos``."""
    profile = f.embedding_profile or {}
    return "ip" if profile.get("output_norm") == "l2" else "cos"


def index_path(layer_path: str | os.PathLike[str], key: str, rows: int,
               metric: AnnMetric) -> Path:
    p = Path(layer_path)
    return p.with_name(f".{p.name}.{key[:16]}.{rows}.{metric}{SUFFIX}")


@dataclass(frozen=True, slots=True)
class IndexFile:
    """An index file found beside a layer, as its name describes it."""

    path: Path
    key16: str
    rows: int
    metric: AnnMetric


def index_files(layer_path: str | os.PathLike[str]) -> tuple[list[IndexFile], list[Path]]:
    """The index files beside ``layer_path``, and the files with an index's prefix and
    suffix whose names do not parse (left by older versions; only ever cleaned up)."""
    p = Path(layer_path)
    good: list[IndexFile] = []
    odd: list[Path] = []
    for x in sorted(p.parent.glob(f".{p.name}.*{SUFFIX}")):
        m = _NAME.fullmatch(x.name[len(p.name) + 1:])
        if m is None:
            odd.append(x)
        else:
            good.append(IndexFile(x, m["key"], int(m["rows"]),
                                  "ip" if m["metric"] == "ip" else "cos"))
    return good, odd


class AnnIndex:
    """A memory-mapped usearch index whose keys are the first :attr:`rows` embedding rows
    of the layer (all of them, or a prefix when the layer has grown since)."""

    def __init__(self, index: Any, path: Path, rows: int) -> None:
        self._index = index
        self.path = path
        self.rows = rows
        self._i8 = str(index.dtype).endswith("I8")

    @classmethod
    def open(cls, path: Path, rows: int, dim: int) -> AnnIndex | None:
        """Map ``path``; None (and a log line) when it is missing or does not fit."""
        try:
            from usearch.index import Index

            if not path.exists():
                return None
            meta = Index.metadata(str(path))
            if not meta or int(meta.get("dimensions", -1)) != dim:
                raise ValueError(f"header says {meta!r}, expected {dim} dims")
            index = Index.restore(str(path), view=True)
            if index is None or len(index) != rows or index.ndim != dim:
                raise ValueError(f"holds {None if index is None else len(index)} vectors, "
                                 f"expected {rows}")
        except FileNotFoundError:
            return None
        except Exception as exc:
            log.warning("ignoring approximate index %s (%s); searching exactly. Delete it "
                        "or rebuild it.", path, exc)
            return None
        return cls(index, path, rows)

    def search(self, query: npt.NDArray[np.float32], count: int,
               expansion: int | None = None) -> npt.NDArray[np.int64]:
        """Embedding rows of (about) the ``count`` nearest vectors, nearest first;
        ``expansion`` is the search breadth (HNSW ef, default :data:`EXPANSION_SEARCH`)."""
        self._index.expansion_search = max(expansion or EXPANSION_SEARCH, count)
        q = query_i8(query) if self._i8 else query
        matches = self._index.search(q, count, threads=1)
        return np.asarray(matches.keys, dtype=np.int64)


def query_i8(q: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
    """``q`` scaled so its largest component is 127: inner-product ranking ignores the
    query's scale, so the query uses all of int8's range whatever the rows' scale is."""
    peak = float(np.abs(q).max()) if q.size else 0.0
    scale = np.float32(127.0 / peak if peak > 0 else 1.0)
    out: npt.NDArray[np.int8] = np.rint(q * scale).astype(np.int8)
    return out


def _row_scale(f: LayerFile, rows: int) -> float | None:
    """The factor that maps the largest component of the first ``rows`` rows of an f32
    layer to 127 (None for i8 layers, whose rows go in as stored).

    usearch turns floats into int8 as ``round(x * 127)``, which suits components near
    +-1; a unit vector of 384 dims has components near +-0.05, which would keep 3 of int8's
    8 bits and rank candidates coarsely. One scale for all rows keeps inner-product order;
    rows appended later that exceed it are clipped, which only coarsens their candidacy
    (every candidate is re-scored exactly).
    """
    if f.element_type == "i8":
        return None
    peak = 0.0
    for start in range(0, rows, ADD_BLOCK):
        block = np.asarray(f.embeddings[start:min(start + ADD_BLOCK, rows)])
        if block.size:
            peak = max(peak, float(np.abs(block).max()))
    return 127.0 / peak if peak > 0 else 1.0


def _rows(f: LayerFile, start: int, stop: int, metric: AnnMetric,
          scale: float | None) -> npt.NDArray[Any]:
    """Rows ``start:stop`` as the index takes them: int8 for ``ip``, float32 otherwise."""
    raw = f.embeddings[start:stop]
    if metric == "ip" and scale is None:
        return np.ascontiguousarray(raw, dtype=np.int8)
    part: npt.NDArray[np.float32] = raw.astype(np.float32)
    if metric == "ip":
        i8: npt.NDArray[np.int8] = np.clip(np.rint(part * np.float32(scale)), -127,
                                           127).astype(np.int8)
        return i8
    if f.element_type == "i8":
        part = part * np.float32(f.quant_scale)
    return np.ascontiguousarray(part)


def find_index(f: LayerFile, keys: dict[int, str] | None = None) -> AnnIndex | None:
    """The index covering the most leading rows of ``f`` (all of them, or a prefix), or
    None. ``keys`` caches :func:`rows_key` by row count for this file version."""
    if f.path is None:
        return None
    total, metric = f.embedding_info.rows, index_metric(f)
    found, _ = index_files(f.path)
    keys = {} if keys is None else keys
    for x in sorted(found, key=lambda x: -x.rows):
        if x.metric != metric or not 0 < x.rows <= total:
            continue
        if x.rows not in keys:
            keys[x.rows] = rows_key(f, x.rows)
        if keys[x.rows][:16] == x.key16:
            index = AnnIndex.open(x.path, x.rows, f.dim)
            if index is not None:
                return index
    return None


def stale_indexes(f: LayerFile, keep: Path | None = None) -> list[Path]:
    """Index files beside ``f`` other than ``keep`` (default: the one search would use)."""
    if f.path is None:
        return []
    if keep is None:
        current = find_index(f)
        keep = current.path if current is not None else None
    found, odd = index_files(f.path)
    return sorted([x.path for x in found if x.path != keep] + odd)


def build_index(f: LayerFile, *, threads: int = 0, progress: Progress | None = None) -> Path:
    """Build the index of layer file ``f`` (or extend one that covers a prefix of its rows);
    return its path.

    Written to a temporary file beside the layer and renamed into place, so readers see
    either no index or a whole one; the layer's other index files are then removed.
    """
    from usearch.index import Index

    if f.path is None:
        raise ValueError("an in-memory layer has no directory to keep an index in")
    metric = index_metric(f)
    rows, dim = f.embedding_info.rows, f.dim
    out = index_path(f.path, rows_key(f, rows), rows, metric)
    if AnnIndex.open(out, rows, dim) is None:
        prefix = find_index(f)
        restored = (Index.restore(str(prefix.path), view=False)
                    if prefix is not None and prefix.rows < rows else None)
        if prefix is not None and restored is not None:
            index = restored
            start = prefix.rows
            scale = _row_scale(f, prefix.rows) if metric == "ip" else None
        else:
            index = Index(ndim=dim, metric=metric, dtype="i8" if metric == "ip" else "f16",
                          connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD,
                          expansion_search=EXPANSION_SEARCH)
            start = 0
            scale = _row_scale(f, rows) if metric == "ip" else None
        for at in range(start, rows, ADD_BLOCK):
            stop = min(at + ADD_BLOCK, rows)
            index.add(np.arange(at, stop, dtype=np.uint64), _rows(f, at, stop, metric, scale),
                      threads=threads)
            if progress:
                progress(stop, rows)
        fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
        os.close(fd)
        try:
            # Readable by whoever can read the layer (mkstemp creates files 0600).
            os.chmod(tmp, stat.S_IMODE(os.stat(f.path).st_mode) & 0o666)
            index.save(tmp)
            os.replace(tmp, out)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    for old in stale_indexes(f, keep=out):
        with contextlib.suppress(OSError):
            old.unlink()
    return out


def ensure_index(layer_path: str | os.PathLike[str], *, min_rows: int | None = None,
                 threads: int = 0, progress: Progress | None = None) -> Path | None:
    """Build the index of the layer at ``layer_path`` if it has at least ``min_rows`` rows
    (default :data:`ANN_MIN_ROWS`); None when it is too small to need one."""
    f = LayerFile.open(layer_path)
    rows = f.embedding_info.rows
    if not (eligible(rows) if min_rows is None else rows >= max(min_rows, 1)):
        return None
    return build_index(f, threads=threads, progress=progress)

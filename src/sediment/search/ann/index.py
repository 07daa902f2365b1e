"""An approximate index beside a large layer: derived, rebuildable, never durable state.

File: ``.<layer file name>.<key16>.<rows>.<metric>.faiss`` in the layer's directory, where
key16 starts :func:`~sediment.search.ann.key.rows_key` of the first ``rows`` embedding rows.
A layer whose rows change stops matching its index; a layer that only grew (an append keeps
the existing rows in place) still matches an index of its first ``rows`` rows, which search
uses for those rows while it scans the appended tail exactly, and which ``build_index``
extends with the tail instead of starting again. Nothing is ever written inside the ``.db``
file (RFC 11.2 keeps durable state there; this is a cache).

Built with FAISS as an HNSW graph over 8-bit scalar-quantised vectors (``IndexHNSWSQ``;
inner product, rows and query normalised first for layers that are not unit-length): each
row is a node linked to about :data:`LINKS` near neighbours per level, and a query walks
the graph keeping the :data:`SEARCH` best nodes seen (``efSearch``), scoring each from its
8-bit code. The index only proposes candidates; the engine re-scores them exactly from the
layer's own matrix, so the index never needs the full-precision vectors the layer already
holds. A graph takes appended rows without retraining (the quantiser's ranges are learnt
once, from the first build's rows).

This replaced an inverted file (IVF over the same codes, 1,024 lists at 100k rows, 12
visited). The inverted file was tuned on a Gaussian mixture with 1,000 points per centre,
where it was about twice as fast as HNSW at equal recall; on vectors without such clusters
(a low-rank Gaussian plus noise) and on real MiniLM embeddings of WordNet's glosses, it
needed 5 to 20 times the lists for recall@10 0.95, while the graph reached it at a small
``efSearch`` on every workload (docs/peers.md has the sweeps). Search breadth is
``efSearch`` (:func:`default_breadth`: :data:`SEARCH` at 100,000 rows, wider for larger
graphs; ``SearchRequest.ann_expansion`` overrides it); at least :data:`MIN_FETCH`
candidates are re-scored.

Any problem reading an index (missing, truncated, garbage, wrong size) makes
:func:`find_index` return None and the engine scans exactly: a broken cache never fails a
search.

Opening an index costs a process far more than one exact scan: importing FAISS (about
0.2 s), keying the rows and reading the graph. A one-shot ``sediment search`` would pay it
for a single query that an exact scan answers in milliseconds, so a process *rents before
it buys*: a layer's index is opened only once the exact scans of that layer in this
process have cost about what opening it costs (:func:`open_cost`, an estimate from the
byte counts and this machine's measured rates; :data:`OPEN_RENT` scales it). Until then
every query scans exactly (recall 1). This is the ski-rental rule: whatever the number of
queries, the process spends at most about twice what the better choice in hindsight would
have cost. A long-running process that wants the index from its first query opens it
ahead of time (``LayerIndex.ann_index(now=True)``, or :data:`OPEN_RENT` 0).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from sediment.errors import SedimentError
from sediment.format import LayerFile
from sediment.format.profile import unit_vectors
from sediment.search.ann import layout
from sediment.search.ann.key import rows_key
from sediment.store.atomic import atomic_write, is_regular_target

log = logging.getLogger(__name__)

ANN_MIN_ROWS = 100_000
"""Layers with fewer rows are always scanned exactly (see docs/peers.md for why)."""
LINKS = 16
"""Graph links per node and upper level (FAISS's ``M``; level 0 has twice as many)."""
BUILD_SEARCH = 128
"""Breadth of the search that places each added row in the graph (``efConstruction``)."""
SEARCH = 96
"""Default breadth of a query's walk (``efSearch``) up to :data:`SEARCH_ROWS` rows; larger
graphs get a wider one (:func:`default_breadth`; docs/peers.md has the sweeps)."""
SEARCH_ROWS = 100_000
"""The graph size :data:`SEARCH` was chosen at."""
BREADTH_GROWTH = 0.43
"""Exponent of :func:`default_breadth`'s growth with the graph's size: fitted to the two
sweeps on unclustered vectors, where recall@10 was 0.975 at breadth 96 over 100,000 rows
and 0.976 at 256 over 1,000,000 (96 there gave 0.886)."""
TRAIN_ROWS = 262_144
"""Rows (evenly spaced) the quantiser learns its ranges from."""
MIN_FETCH = 20
"""Fewest candidates asked of the index; all are re-scored exactly, so asking for more than
k repairs the codes' near misses. Twice the default k: on the peers workload re-scoring the
best 16 by code already gave the recall of re-scoring 64 at every breadth (20 leaves a
margin), and each re-scored row is a cache miss in the layer's matrix (docs/peers.md)."""
MAX_FETCH = 4096
"""Most candidates asked of the index; a filter that needs more falls back to exact."""
SUFFIX = ".faiss"
ADD_BLOCK = 65536
OPEN_RENT = 1.0
"""Exact scans a process makes of a layer before it opens the layer's index, as a multiple
of :func:`open_cost` (0: open it on the first query)."""
FAISS_IMPORT_S = 0.2
"""Seconds a fresh process takes to import FAISS (0.17 s measured here)."""
SCAN_BPS = 10e9
"""Bytes per second of an exact scan (memory bandwidth of a 2-core host)."""
KEY_BPS = 2e9
"""Bytes per second of keying rows (:func:`~sediment.search.ann.key.rows_key`, CRC-32)."""
LOAD_BPS = 2e9
"""Bytes per second of checking and reading an index file into FAISS."""

AnnMetric = Literal["ip", "cos"]
Progress = Callable[[int, int], None]
_NAME = re.compile(r"\.(?P<key>[0-9a-f]{16})\.(?P<rows>[0-9]+)\.(?P<metric>ip|cos)"
                   + re.escape(SUFFIX) + "$")


def eligible(rows: int) -> bool:
    """Whether a layer of ``rows`` rows is large enough to be searched approximately."""
    return rows >= max(ANN_MIN_ROWS, 1)


def scan_cost(f: LayerFile) -> float:
    """Estimated seconds of one exact scan of ``f``'s embedding matrix."""
    return f.embeddings.nbytes / SCAN_BPS


def open_cost(f: LayerFile, index_bytes: int) -> float:
    """Estimated seconds this process would take to open an index of ``index_bytes`` for
    ``f``: importing FAISS unless it is loaded, keying the rows, reading the file."""
    imported = "faiss" in sys.modules
    return ((0.0 if imported else FAISS_IMPORT_S) + f.embeddings.nbytes / KEY_BPS
            + index_bytes / LOAD_BPS)


def rent_paid(f: LayerFile, scanned_s: float, index_bytes: int) -> bool:
    """Whether ``scanned_s`` seconds of exact scans of ``f`` have paid for opening an
    index of ``index_bytes`` (:data:`OPEN_RENT` times :func:`open_cost`)."""
    return scanned_s >= OPEN_RENT * open_cost(f, index_bytes)


def default_breadth(rows: int) -> int:
    """The default ``efSearch`` for a graph of ``rows`` nodes: :data:`SEARCH` up to
    :data:`SEARCH_ROWS` rows, then growing as ``rows ** BREADTH_GROWTH`` (HNSW's recall
    at a fixed breadth falls as the graph grows), to the nearest multiple of 32: 256 at
    1,000,000 rows."""
    scale: float = max(1.0, rows / SEARCH_ROWS) ** BREADTH_GROWTH
    return max(SEARCH, 32 * round(SEARCH * scale / 32))


def index_metric(f: LayerFile) -> AnnMetric:
    """``ip`` for layers of unit-length vectors (cosine = dot), else ``cos``."""
    profile = f.embedding_profile or {}
    return "ip" if unit_vectors(profile) else "cos"


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
    """A FAISS HNSW index whose ids are the first :attr:`rows` embedding rows of the layer
    (all of them, or a prefix when the layer has grown since)."""

    def __init__(self, index: Any, path: Path, rows: int, normalise: bool) -> None:
        self._index = index
        self.path = path
        self.rows = rows
        self.dim = int(index.d)
        self._normalise = normalise
        self._params: dict[int, Any] = {}
        import faiss

        self._swig_ptr = faiss.swig_ptr

    @classmethod
    def open(cls, path: Path, rows: int, dim: int, metric: AnnMetric) -> AnnIndex | None:
        """Read ``path``; None (and a log line) when it is missing or does not fit."""
        try:
            import faiss

            if not path.exists():
                return None
            layout.check(path, rows, dim)
            index = faiss.read_index(str(path))
            if not isinstance(index, faiss.IndexHNSWSQ):
                raise ValueError(f"holds a {type(index).__name__}, not an HNSW graph")
            if index.d != dim or index.ntotal != rows:
                raise ValueError(f"holds {index.ntotal} vectors of {index.d} dims, expected "
                                 f"{rows} of {dim}")
        except FileNotFoundError:
            return None
        except Exception as exc:
            log.warning("ignoring approximate index %s (%s); searching exactly. Delete it "
                        "or rebuild it.", path, str(exc).splitlines()[0] if str(exc) else exc)
            return None
        return cls(index, path, rows, metric == "cos")

    def search(self, query: npt.NDArray[np.float32], count: int,
               expansion: int | None = None) -> npt.NDArray[np.int64]:
        """Embedding rows of (about) the ``count`` nearest vectors, nearest first;
        ``expansion`` is the breadth of the walk (default :func:`default_breadth` of the
        graph's size, never below ``count``)."""
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        if q.shape[1] != self.dim or count < 1:  # FAISS's C call checks neither
            raise ValueError(f"query of {q.shape[1]} dims for an index of {self.dim}, or "
                             f"count {count} below 1")
        if self._normalise:
            q = q / max(float(np.linalg.norm(q)), 1e-12)
        breadth = max(expansion or default_breadth(self.rows), count)
        params = self._params.get(breadth)
        if params is None:
            params = self._params[breadth] = _search_params(breadth)
        # search_c, not FAISS's search wrapper: the wrapper's argument checks and copies
        # cost about as much as a short walk (tens of microseconds) on every query.
        ids = np.empty(count, dtype=np.int64)
        dist = np.empty(count, dtype=np.float32)
        ptr = self._swig_ptr
        self._index.search_c(1, ptr(q), count, ptr(dist), ptr(ids), params)
        return ids[ids >= 0]


def _search_params(breadth: int) -> Any:
    import faiss

    return faiss.SearchParametersHNSW(efSearch=breadth)  # type: ignore[attr-defined]


def _rows(f: LayerFile, which: slice | npt.NDArray[np.int64],
          metric: AnnMetric) -> npt.NDArray[np.float32]:
    """The rows ``which`` selects, as the index takes them: float32, normalised for ``cos``."""
    part: npt.NDArray[np.float32] = np.asarray(f.embeddings[which], dtype=np.float32)
    if f.element_type == "i8":
        part = part * np.float32(f.quant_scale)
    if metric == "cos":
        norms = np.sqrt(np.einsum("ij,ij->i", part, part))
        part = part / np.maximum(norms, 1e-12)[:, None]
    return np.ascontiguousarray(part, dtype=np.float32)


def _training_rows(f: LayerFile, rows: int, metric: AnnMetric) -> npt.NDArray[np.float32]:
    pick = np.unique(np.linspace(0, rows - 1, min(rows, TRAIN_ROWS)).astype(np.int64))
    return _rows(f, pick, metric)


def _trained(f: LayerFile, rows: int, metric: AnnMetric) -> Any:
    """An empty graph whose quantiser ranges are learnt from ``f``."""
    import faiss

    qt_8bit: Any = faiss.ScalarQuantizer.QT_8bit
    index = faiss.IndexHNSWSQ(f.dim, qt_8bit, LINKS, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = BUILD_SEARCH
    index.train(_training_rows(f, rows, metric))
    return index


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
            index = AnnIndex.open(x.path, x.rows, f.dim, metric)
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
    return its path. ``threads`` 0 lets FAISS use every core.

    Written to a temporary file beside the layer and renamed into place, so readers see
    either no index or a whole one; the layer's other index files are then removed.
    """
    import faiss

    if f.path is None:
        raise ValueError("an in-memory layer has no directory to keep an index in")
    metric = index_metric(f)
    rows, dim = f.embedding_info.rows, f.dim
    out = index_path(f.path, rows_key(f, rows), rows, metric)
    if not is_regular_target(out):
        raise SedimentError(f"{out} is not a regular file; remove it to let the index be "
                            "built there")
    if AnnIndex.open(out, rows, dim, metric) is None:
        before = faiss.omp_get_max_threads()
        if threads > 0:
            faiss.omp_set_num_threads(threads)
        try:
            prefix = find_index(f)
            if prefix is not None and prefix.rows < rows:
                index, start = prefix._index, prefix.rows
            else:
                index = _trained(f, rows, metric)
                start = 0
            for at in range(start, rows, ADD_BLOCK):
                stop = min(at + ADD_BLOCK, rows)
                index.add(_rows(f, slice(at, stop), metric))
                if progress:
                    progress(stop, rows)
        finally:
            faiss.omp_set_num_threads(before)
        # Readable by whoever can read the layer.
        atomic_write(out, faiss.serialize_index(index).data,
                     mode=stat.S_IMODE(os.stat(f.path).st_mode) & 0o666)
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


def clean_indexes(layer_path: str | os.PathLike[str], *, remove_all: bool = False
                  ) -> list[Path]:
    """Remove the index files of older versions of the layer (with ``remove_all``, every
    index file beside it); return those removed. A layer that cannot be read keeps no
    usable index, so all of its index files go."""
    if remove_all:
        found, odd = index_files(layer_path)
        doomed = [x.path for x in found] + odd
    else:
        try:
            doomed = stale_indexes(LayerFile.open(layer_path))
        except SedimentError:
            found, odd = index_files(layer_path)
            doomed = [x.path for x in found] + odd
    removed = []
    for old in doomed:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()
            removed.append(old)
    return removed

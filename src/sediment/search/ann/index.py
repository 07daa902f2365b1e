"""An HNSW index beside a large layer: derived, rebuildable, never durable state.

File: ``.<layer file name>.<key16>.<metric>.usearch`` in the layer's directory, where key16
is the start of :func:`content_key`, so a layer that changes (an append rewrites the file)
simply stops matching its old index, and a copied layer finds its index again. Nothing is
ever written inside the ``.db`` file (RFC 11.2 keeps durable state there; this is a cache).

Built with usearch (HNSW; wheels for every major platform, only numpy as a Python
dependency). Vectors are stored as int8 for unit-length layers (``ip`` metric) and f16
otherwise (``cos``): the index only proposes candidates, which the engine re-scores
exactly from the layer's own matrix, so storage precision costs no final accuracy.
Parameters: connectivity (HNSW "M") 16, expansion 128 when adding and searching, and at
least :data:`MIN_FETCH` candidates (more for hybrid or filtered searches) re-scored exactly:
recall@10 is measured in docs/peers.md (ef 64 instead of 128 was 0.96 at 20k rows, too
close to the 0.95 floor; with only the engine's 20 candidates, 1M rows gave 0.936).

Any problem reading an index (missing, truncated, garbage, wrong size) makes
:func:`find_index` return None and the engine scans exactly: a broken cache never fails a
search.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from sediment.format import LayerFile
from sediment.search.ann.key import content_key

log = logging.getLogger(__name__)

ANN_MIN_ROWS = 100_000
"""Layers with fewer rows are always scanned exactly (see docs/peers.md for why)."""
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 128
MIN_FETCH = 128
"""Fewest candidates asked of the index; all are re-scored exactly, so asking for more than
k repairs the graph's near misses (measured at 1M in docs/peers.md)."""
MAX_FETCH = 4096
"""Most candidates asked of the index; a filter that needs more falls back to exact."""
SUFFIX = ".usearch"
ADD_BLOCK = 65536

AnnMetric = Literal["ip", "cos"]
Progress = Callable[[int, int], None]


def eligible(rows: int) -> bool:
    """Whether a layer of ``rows`` rows is large enough to be searched approximately."""
    return rows >= max(ANN_MIN_ROWS, 1)


def index_metric(f: LayerFile) -> AnnMetric:
    """``ip`` for layers of unit-length vectors (cosine = dot), else ``cos``."""
    profile = f.embedding_profile or {}
    return "ip" if profile.get("output_norm") == "l2" else "cos"


def index_path(layer_path: str | os.PathLike[str], key: str, metric: AnnMetric) -> Path:
    p = Path(layer_path)
    return p.with_name(f".{p.name}.{key[:16]}.{metric}{SUFFIX}")


def stale_indexes(layer_path: str | os.PathLike[str], keep: Path | None = None) -> list[Path]:
    """Index files of ``layer_path`` other than ``keep`` (older versions of the layer)."""
    p = Path(layer_path)
    return sorted(x for x in p.parent.glob(f".{p.name}.*{SUFFIX}") if x != keep)


class AnnIndex:
    """A memory-mapped usearch index whose keys are the layer's embedding rows."""

    def __init__(self, index: Any, path: Path) -> None:
        self._index = index
        self.path = path

    @classmethod
    def open(cls, path: Path, rows: int, dim: int) -> AnnIndex | None:
        """Map ``path``; None (and a log line) when it is missing or does not fit the layer."""
        try:
            from usearch.index import Index

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
        return cls(index, path)

    def search(self, query: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.int64]:
        """Embedding rows of (about) the ``count`` nearest vectors, nearest first."""
        self._index.expansion_search = max(EXPANSION_SEARCH, count)
        matches = self._index.search(query, count, threads=1)
        return np.asarray(matches.keys, dtype=np.int64)


def _f32_rows(f: LayerFile, start: int, stop: int) -> npt.NDArray[np.float32]:
    part = np.asarray(f.embeddings[start:stop], dtype=np.float32)
    if f.element_type == "i8":
        part = part * np.float32(f.quant_scale)
    return np.ascontiguousarray(part)


def build_index(f: LayerFile, *, threads: int = 0, progress: Progress | None = None,
                key: str | None = None) -> Path:
    """Build (or reuse) the index of layer file ``f``; return its path.

    Written to a temporary file beside the layer and renamed into place, so readers see
    either no index or a whole one; older indexes of the same layer are then removed.
    """
    from usearch.index import Index

    if f.path is None:
        raise ValueError("an in-memory layer has no directory to keep an index in")
    metric = index_metric(f)
    out = index_path(f.path, key or content_key(f), metric)
    rows, dim = f.embedding_info.rows, f.dim
    if AnnIndex.open(out, rows, dim) is None:
        index = Index(ndim=dim, metric=metric, dtype="i8" if metric == "ip" else "f16",
                      connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD,
                      expansion_search=EXPANSION_SEARCH)
        for start in range(0, rows, ADD_BLOCK):
            stop = min(start + ADD_BLOCK, rows)
            index.add(np.arange(start, stop, dtype=np.uint64), _f32_rows(f, start, stop),
                      threads=threads)
            if progress:
                progress(stop, rows)
        fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
        os.close(fd)
        try:
            index.save(tmp)
            os.replace(tmp, out)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    for old in stale_indexes(f.path, keep=out):
        with contextlib.suppress(OSError):
            old.unlink()
    return out


def find_index(f: LayerFile, key: str) -> AnnIndex | None:
    """The usable index of ``f`` (content key ``key``), or None."""
    if f.path is None:
        return None
    path = index_path(f.path, key, index_metric(f))
    if not path.exists():
        return None
    return AnnIndex.open(path, f.embedding_info.rows, f.dim)


def ensure_index(layer_path: str | os.PathLike[str], *, min_rows: int | None = None,
                 threads: int = 0, progress: Progress | None = None) -> Path | None:
    """Build the index of the layer at ``layer_path`` if it has at least ``min_rows`` rows
    (default :data:`ANN_MIN_ROWS`); None when it is too small to need one."""
    f = LayerFile.open(layer_path)
    rows = f.embedding_info.rows
    if not (eligible(rows) if min_rows is None else rows >= max(min_rows, 1)):
        return None
    return build_index(f, threads=threads, progress=progress)

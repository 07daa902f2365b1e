"""Hybrid (vector + BM25) search latency; the BM25 index is built by the first query."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.timing import Stats, repeat
from sediment.search import SearchRequest, search
from sediment.store import LayerSet


@dataclass(frozen=True, slots=True)
class HybridLatency:
    rows: int
    element_type: str
    first_query_s: float
    """First hybrid query on a layer set that has already run one vector query."""
    first_bm25_ms: float
    """The engine's own ``bm25`` timing of that first query: index build plus one scoring."""
    engine: Stats
    bm25_p50_ms: float
    vector_p50_ms: float


def measure(path: Path, vectors: npt.NDArray[np.float32], texts: Sequence[str], n: int,
            warmup: int) -> HybridLatency:
    ls = LayerSet({"base": path})
    search(ls, SearchRequest(text=None, k=10, mode="vector"), vectors[0], normalised=True)
    first_request = SearchRequest(text=texts[0], k=10, mode="hybrid")
    t = time.perf_counter()
    first = search(ls, first_request, vectors[0], normalised=True)
    first_s = time.perf_counter() - t
    bm25_ms: list[float] = []
    vec_ms: list[float] = []

    def run(i: int) -> object:
        j = i % len(texts)
        r = search(ls, SearchRequest(text=texts[j], k=10, mode="hybrid"),
                   vectors[j % len(vectors)], normalised=True)
        bm25_ms.append(r.timings_ms.get("bm25", 0.0))
        vec_ms.append(r.timings_ms.get("vector", 0.0))
        return r

    stats = repeat(run, n, warmup=warmup)
    rows = sum(layer.file.chunk_count for layer in ls.layers())
    etype = ls.layers()[0].file.element_type
    return HybridLatency(rows, etype, first_s, first.timings_ms.get("bm25", 0.0), stats,
                         float(np.median(bm25_ms[warmup:])), float(np.median(vec_ms[warmup:])))

"""Exact vector search latency: the whole engine against the raw scan kernel it calls."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.timing import Stats, interleaved, paired_difference
from sediment.format import LayerFile
from sediment.search import SearchRequest, search
from sediment.search.vector import dot_scores, top_k
from sediment.store import LayerSet

K = 10


@dataclass(frozen=True, slots=True)
class VectorLatency:
    rows: int
    element_type: str
    bytes_scanned: int
    first_query_s: float
    """First engine query on a freshly opened layer set: chunk-table checks, row map."""
    engine: Stats
    kernel: Stats
    agree: bool
    """Whether the engine's top-10 ids equal the kernel's for every sampled query."""

    def gbps(self, s: float) -> float:
        return self.bytes_scanned / s / 1e9

    @property
    def overhead(self) -> float:
        """Median over queries of engine time minus kernel time for the same query."""
        return paired_difference(self.engine, self.kernel)


def measure(path: Path, queries: npt.NDArray[np.float32], n: int, warmup: int
            ) -> VectorLatency:
    """Time ``n`` engine queries (k=10, mode vector) and ``n`` raw kernel scans, alternating."""
    ls = LayerSet({"base": path})
    request = SearchRequest(text=None, k=K, mode="vector")
    t = time.perf_counter()
    search(ls, request, queries[0], normalised=True)
    first = time.perf_counter() - t

    def engine(i: int) -> object:
        return search(ls, request, queries[i % len(queries)], normalised=True)

    f = LayerFile.open(path)
    matrix, scale = f.embeddings, f.quant_scale

    def kernel(i: int) -> object:
        return top_k(dot_scores(matrix, queries[i % len(queries)], scale), K)

    engine_stats, kernel_stats = interleaved([engine, kernel], n, warmup=warmup)
    agree = True
    for q in queries[:5]:
        got = [h.chunk.id for h in search(ls, request, q, normalised=True).hits]
        want = top_k(dot_scores(matrix, q, scale), K) + 1
        agree = agree and got == want.tolist()
    return VectorLatency(matrix.shape[0], f.element_type, int(matrix.nbytes), first, engine_stats,
                         kernel_stats, agree)

"""The same chunks split over 1, 2 and 4 layers: per-query cost should be the scan, not
the number of layers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench import layerfiles, synthetic
from bench.timing import Stats, interleaved, paired_difference
from sediment.format import LayerFile
from sediment.search import SearchRequest, search
from sediment.search.vector import dot_scores, top_k
from sediment.store import LayerName, LayerSet

SPLITS: dict[int, tuple[LayerName, ...]] = {
    1: (LayerName.BASE,),
    2: (LayerName.BASE, LayerName.LOCAL),
    4: (LayerName.BASE, LayerName.DELTA, LayerName.USER, LayerName.LOCAL),
}
CANDIDATES = 50
"""What the engine keeps per layer for k=10 (``max(5 * k, 50)``)."""


@dataclass(frozen=True, slots=True)
class SplitLatency:
    layers: int
    element_type: str
    total: int
    engine: Stats
    kernel: Stats
    """Raw scan + top-50 of every layer, summed, without the engine."""

    @property
    def overhead(self) -> float:
        return paired_difference(self.engine, self.kernel)


def _build(directory: Path, names: tuple[LayerName, ...], vectors: npt.NDArray[np.float32],
           contents: list[str], element_type: str) -> dict[LayerName, Path]:
    parts = np.array_split(np.arange(len(vectors)), len(names))
    paths: dict[LayerName, Path] = {}
    for name, idx in zip(names, parts, strict=True):
        lo, hi = int(idx[0]), int(idx[-1]) + 1
        path = directory / name.file_name
        chunks = synthetic.chunks(contents[lo:hi], first_id=lo + 1)
        layerfiles.build(path, chunks, vectors[lo:hi], element_type)
        paths[name] = path
    return paths


def measure(workdir: Path, vectors: npt.NDArray[np.float32], contents: list[str],
            queries: npt.NDArray[np.float32], element_type: str, n: int, warmup: int
            ) -> list[SplitLatency]:
    out = []
    request = SearchRequest(text=None, k=10, mode="vector")
    for count, names in SPLITS.items():
        directory = workdir / f"split-{element_type}-{count}"
        paths = _build(directory, names, vectors, contents, element_type)
        ls = LayerSet(dict(paths))
        search(ls, request, queries[0], normalised=True)
        files = [LayerFile.open(p) for p in paths.values()]

        def engine(i: int, ls: LayerSet = ls) -> object:
            return search(ls, request, queries[i % len(queries)], normalised=True)

        def kernel(i: int, files: list[LayerFile] = files) -> object:
            q = queries[i % len(queries)]
            return [top_k(dot_scores(f.embeddings, q, f.quant_scale), CANDIDATES)
                    for f in files]

        e, k = interleaved([engine, kernel], n, warmup=warmup)
        out.append(SplitLatency(count, element_type, len(vectors), e, k))
    return out

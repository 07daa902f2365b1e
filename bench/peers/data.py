"""The shared workload: synthetic unit vectors, queries and the exact top-10 of each query.

Vectors are a Gaussian mixture, not isotropic noise: ``n / 1000`` centres drawn from a unit
normal, each point a centre plus unit normal noise, L2-normalised (384 dims, float32, seed
fixed). Isotropic random vectors have no neighbourhoods (every point is about equally far
from every other), which makes every graph index fail (HNSW recall@10 below 0.3 here) and
says nothing about real embeddings; a mixture gives each query a neighbourhood, as text
embeddings do (same-topic cosine about 0.5, unrelated about 0). Queries are fresh points
from the same mixture, not copies of stored ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

DIM = 384
K = 10
SEED = 20260101
PER_CENTRE = 1000
F32 = npt.NDArray[np.float32]


def mixture(n: int, centres: F32, rng: np.random.Generator, block: int = 131072) -> F32:
    out = np.empty((n, centres.shape[1]), dtype=np.float32)
    for start in range(0, n, block):
        part = out[start:start + block]
        pick = rng.integers(0, len(centres), len(part))
        rng.standard_normal(part.shape, dtype=np.float32, out=part)
        part += centres[pick]
        part /= np.sqrt(np.einsum("ij,ij->i", part, part))[:, None]
    return out


def generate(n: int, queries: int) -> tuple[F32, F32]:
    rng = np.random.default_rng(SEED)
    centres = rng.standard_normal((max(n // PER_CENTRE, 1), DIM), dtype=np.float32)
    return mixture(n, centres, rng), mixture(queries, centres, np.random.default_rng(SEED + 1))


def exact_top_k(x: F32, q: F32, k: int = K, block: int = 262144) -> npt.NDArray[np.int64]:
    """Ground truth by brute force in float32, in blocks of rows."""
    best_s = np.full((len(q), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(q), 0), dtype=np.int64)
    for start in range(0, len(x), block):
        s = q @ x[start:start + block].T
        i = np.broadcast_to(np.arange(start, start + s.shape[1]), s.shape)
        cs, ci = np.concatenate([best_s, s], axis=1), np.concatenate([best_i, i], axis=1)
        top = np.argpartition(-cs, k - 1, axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(cs, top, 1), np.take_along_axis(ci, top, 1)
    order = np.argsort(-best_s, axis=1, kind="stable")
    return np.take_along_axis(best_i, order, 1)


def prepare(workdir: Path, n: int, queries: int) -> Path:
    """Write ``vectors.npy``, ``queries.npy`` and ``truth.npy`` under ``workdir/n``."""
    d = workdir / f"{n}"
    d.mkdir(parents=True, exist_ok=True)
    if not (d / "truth.npy").exists() or np.load(d / "queries.npy").shape[0] != queries:
        x, q = generate(n, queries)
        np.save(d / "vectors.npy", x)
        np.save(d / "queries.npy", q)
        np.save(d / "truth.npy", exact_top_k(x, q))
    return d

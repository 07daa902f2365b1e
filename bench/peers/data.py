"""The shared workloads: unit vectors, queries and the exact top-10 of each query.

``mixture``: vectors are a Gaussian mixture, not isotropic noise: ``n / 1000`` centres
drawn from a unit normal, each point a centre plus unit normal noise, L2-normalised (384
dims, float32, seed fixed). Isotropic random vectors have no neighbourhoods (every point
is about equally far from every other), which makes every graph index fail (HNSW
recall@10 below 0.3 here) and says nothing about real embeddings; a mixture gives each
query a neighbourhood, as text embeddings do (same-topic cosine about 0.5, unrelated about
0). Queries are fresh points from the same mixture, not copies of stored ones.

``unclustered``: no centres at all. Each vector is a point of a 32-dim standard Gaussian,
mapped into 384 dims by a fixed random linear map, plus isotropic noise of a quarter of the
signal's energy, L2-normalised: neighbourhoods exist (the 32 latent dims carry most of the
similarity) but are not separated into clumps, which is what an inverted file relies on.
Each query is a stored vector's latent point moved by Gaussian noise (0.3 per latent dim)
and mapped and noised the same way: near a stored vector, never a copy of one.

``minilm``: real sentence embeddings, all-MiniLM-L6-v2 vectors of the 117,659 WordNet 3.0
glosses (:mod:`bench.peers.wordnet` embeds them once and caches them). Every ``stride``-th
passage is held out as a query and the rest are stored, so queries are real texts that are
not in the index.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

DIM = 384
K = 10
SEED = 20260101
LATENT = 32
WORKLOADS = ("mixture", "unclustered", "minilm")
MINILM_CACHE = Path.home() / ".cache" / "sediment-bench" / "wordnet-minilm.npy"
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


def _normalised(x: F32) -> F32:
    x /= np.sqrt(np.einsum("ij,ij->i", x, x))[:, None]
    return x


def unclustered(n: int, queries: int, block: int = 131072) -> tuple[F32, F32]:
    rng = np.random.default_rng(SEED + 7)
    lift = rng.standard_normal((LATENT, DIM), dtype=np.float32) / np.float32(np.sqrt(LATENT))
    x = np.empty((n, DIM), dtype=np.float32)
    z_pick = np.empty((queries, LATENT), dtype=np.float32)
    pick = set(rng.choice(n, size=min(queries, n), replace=False).tolist())
    taken = 0
    for start in range(0, n, block):
        z = rng.standard_normal((min(block, n - start), LATENT), dtype=np.float32)
        part = z @ lift
        part += 0.5 * rng.standard_normal(part.shape, dtype=np.float32)
        x[start:start + len(part)] = _normalised(part)
        for i in sorted(j - start for j in pick if start <= j < start + len(part)):
            z_pick[taken] = z[i]
            taken += 1
    qz = z_pick[:taken] + 0.3 * rng.standard_normal((taken, LATENT), dtype=np.float32)
    q = qz @ lift + 0.5 * rng.standard_normal((taken, DIM), dtype=np.float32)
    return x, _normalised(q)


def minilm(vectors: Path, queries: int) -> tuple[F32, F32]:
    """Stored and held-out rows of the cached MiniLM vectors (see :mod:`wordnet`)."""
    v = np.load(vectors)
    stride = max(len(v) // max(queries, 1), 1)
    held = np.zeros(len(v), dtype=np.bool_)
    held[np.arange(0, len(v), stride)[:queries]] = True
    return np.ascontiguousarray(v[~held]), np.ascontiguousarray(v[held])


def data_dir(workdir: Path, workload: str, n: int) -> Path:
    if workload == "minilm":
        return workdir / "minilm"
    return workdir / (f"{n}" if workload == "mixture" else f"{workload}-{n}")


def prepare(workdir: Path, n: int, queries: int, workload: str = "mixture",
            vectors: Path | None = None) -> Path:
    """Write ``vectors.npy``, ``queries.npy`` and ``truth.npy`` under :func:`data_dir`
    (``n`` is ignored for ``minilm``, whose size is the corpus's)."""
    d = data_dir(workdir, workload, n)
    d.mkdir(parents=True, exist_ok=True)
    if not (d / "truth.npy").exists() or np.load(d / "queries.npy").shape[0] != queries:
        if workload == "mixture":
            x, q = generate(n, queries)
        elif workload == "unclustered":
            x, q = unclustered(n, queries)
        else:
            if vectors is None or not vectors.exists():
                raise SystemExit(f"no MiniLM vectors at {vectors}: make them with "
                                 "python -m bench.peers.wordnet")
            x, q = minilm(vectors, queries)
        np.save(d / "vectors.npy", x)
        np.save(d / "queries.npy", q)
        np.save(d / "truth.npy", exact_top_k(x, q))
    return d

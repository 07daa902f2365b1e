"""Exact (brute-force) vector scoring over a mapped embedding matrix (RFC 9).

f32 matrices go through numpy's BLAS matrix-vector product, which runs at memory bandwidth.
i8 matrices go through simsimd's int8 dot-product kernels (AVX2 / AVX-512 / NEON): numpy
would first convert the matrix to f32, which is slower than scanning f32. Scores are
dequantised with the file's ``quant_scale`` so f32 and i8 layers give comparable numbers.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import simsimd

Metric = Literal["cosine", "dot"]

F32 = npt.NDArray[np.float32]
SMALL = 1024
"""Up to this many scores, :func:`top_k` sorts them all: one call instead of four."""
LARGE = 65536
"""From this many scores, :func:`top_k` first finds a threshold from block maxima."""
BLOCKS = 1024
F32_BLOCK = 1024
F32_THREADED_ROWS = 262144
"""Below this many f32 rows, the scan goes through BLAS in blocks of ``F32_BLOCK`` rows,
which OpenBLAS runs on the calling thread: a memory-bound product of a few MB gains
nothing from threads, and on a busy host waiting for OpenBLAS's threads cost 15-25 ms per
scan of 10,000 x 384 against 0.2 ms on one thread (docs/memory.md, latency)."""
I8_THREADED_ROWS = 262144
"""From this many rows, simsimd's int8 kernel runs on every core (like numpy's BLAS for
f32): below it, starting threads costs more than it saves."""


def quantize_query(q: F32) -> tuple[npt.NDArray[np.int8], float]:
    peak = float(np.max(np.abs(q))) if q.size else 0.0
    scale = peak / 127.0 if peak > 0 else 1.0
    return np.clip(np.rint(q / scale), -127, 127).astype(np.int8), scale


def dot_scores(matrix: npt.NDArray[Any], query: F32, quant_scale: float = 1.0) -> F32:
    """Dot product of every row with ``query`` (already dequantised for i8)."""
    if matrix.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    if matrix.dtype == np.int8:
        qi, qscale = quantize_query(query)
        threads = 0 if matrix.shape[0] >= I8_THREADED_ROWS else 1
        raw = simsimd.cdist(qi[None, :], matrix, metric="dot", out_dtype="float32",
                            threads=threads)
        return np.asarray(raw, dtype=np.float32).reshape(-1) * np.float32(quant_scale * qscale)
    if not matrix.flags.aligned:
        matrix = np.ascontiguousarray(matrix)
    if query.dtype != np.float32:
        query = query.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # huge rows score inf: top_k skips them
        if matrix.shape[0] < F32_THREADED_ROWS and matrix.dtype == np.float32:
            scores: F32 = np.concatenate([matrix[i:i + F32_BLOCK] @ query for i in
                                          range(0, matrix.shape[0], F32_BLOCK)])
        else:
            scores = matrix @ query
    return scores if scores.dtype == np.float32 else scores.astype(np.float32)


def row_norms(matrix: npt.NDArray[Any], quant_scale: float = 1.0,
              block: int = 65536) -> F32:
    """L2 norm of every row, in blocks so a huge matrix never needs a full f32 copy."""
    out = np.empty(matrix.shape[0], dtype=np.float32)
    for start in range(0, matrix.shape[0], block):
        part = np.asarray(matrix[start:start + block], dtype=np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            out[start:start + block] = np.sqrt(np.einsum("ij,ij->i", part, part))
    if matrix.dtype == np.int8:
        out *= np.float32(abs(quant_scale))
    return out


def cosine(dots: F32, norms: F32, q: F32) -> F32:
    """Dot products of rows with ``q`` turned into cosines, given the rows' norms (a zero
    row scores 0; an infinite one NaN, which ``top_k`` skips)."""
    qn = float(np.linalg.norm(q)) or 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        return (dots / (np.maximum(norms, 1e-12) * qn)).astype(np.float32)


def scores_of(vectors: F32, q: F32, metric: Metric, normalised: bool) -> F32:
    """The scores of a few vectors (rows of ``vectors``) against ``q``: what both backends
    give a candidate they fetched rather than scanned."""
    dots: F32 = (vectors @ q).astype(np.float32)
    if metric == "cosine" and not normalised:
        return cosine(dots, np.linalg.norm(vectors, axis=1), q)
    return dots


def top_k(scores: F32, k: int) -> npt.NDArray[np.int64]:
    """Indices of the ``k`` largest finite scores, best first (ties: lower index first)."""
    finite = np.isfinite(scores)
    if len(scores) <= SMALL and k > 0 and bool(finite.all()):
        return np.argsort(-scores, kind="stable")[:k].astype(np.int64)
    n = int(finite.sum())
    if n == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, n)
    if n < len(scores):
        scores = np.where(finite, scores, -np.inf).astype(np.float32)
    cand = _above_block_threshold(scores, k) if len(scores) >= LARGE and k <= BLOCKS // 4 \
        else None
    return _best(scores, np.arange(len(scores)) if cand is None else cand, k).astype(np.int64)


def _best(scores: F32, cand: npt.NDArray[np.intp], k: int) -> npt.NDArray[np.intp]:
    """The ``k`` best of ``scores[cand]`` (``cand`` ascending), best first, ties to the
    lower index: every score above the k-th, then the lowest-indexed of those equal to it,
    so a flood of equal scores (a zero query) costs two passes, not a sort."""
    vals = scores[cand]
    if len(cand) > k:
        kth = vals[np.argpartition(-vals, k - 1)[k - 1]]
        above = cand[vals > kth]
        cand = np.concatenate([above, cand[vals == kth][: k - len(above)]])
        vals = scores[cand]
    return cand[np.lexsort((cand, -vals))]


def _above_block_threshold(scores: F32, k: int) -> npt.NDArray[np.intp] | None:
    """Indices of every score at least the k-th largest block maximum, in order; None
    when that maximum is -inf (a filter left fewer than k blocks with a score).

    k blocks each hold a score at least that large, so the k largest scores (and all ties
    with the k-th) are among them. A partition of a million scores costs 9 to 14 ms here;
    block maxima, one comparison and the few candidates above it cost under 1 ms
    (docs/benchmarks.md, exact search)."""
    width = -(-len(scores) // BLOCKS)
    maxima = np.maximum.reduceat(scores, np.arange(0, len(scores), width))
    threshold = np.partition(maxima, len(maxima) - k)[len(maxima) - k]
    if not np.isfinite(threshold):
        return None
    return np.flatnonzero(scores >= threshold)

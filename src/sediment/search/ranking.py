"""The ranking core both backends call: rank, fuse and group one pool of candidates.

A pool is every candidate version a search gathered, from any layer: its chunk id, the
rank of its layer (local 3 > user 2 > delta 1 > base 0), a position that breaks the last
ties (the row in its file or table), and both raw scores (cosine, NaN when the vector side
did not score it; BM25, 0 when no term matched). :func:`fuse_pool` gives each version its
rank on each side, fuses them with the request's fusion, and keeps one version per id: the
best-scoring one (a logical chunk ranks by its best-matching version; precedence then shows
its highest layer's version, which each backend looks up). Pure numpy, no I/O: the layer
files' engine and the PostgreSQL search give the same order for the same pool because this
is the only code that orders it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sediment.search.fusion import Fusion, Pool

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]


def ranks(score: F32, valid: npt.NDArray[np.bool_], tiebreak: Sequence[I64]) -> I64:
    """1-based rank of each valid entry by descending score (ties by ``tiebreak``); 0 else."""
    out = np.zeros(len(score), dtype=np.int64)
    idx = np.flatnonzero(valid)
    if len(idx):
        keys = [t[idx] for t in reversed(tiebreak)] + [-score[idx]]
        order = idx[np.lexsort(keys)]
        out[order] = np.arange(1, len(order) + 1)
    return out


@dataclass(frozen=True, slots=True)
class Fused:
    """Per pool entry: its fused score and its rank on each side (0: not ranked there);
    ``best``: the entries kept, one per id, in fused order."""

    best: I64
    fused: F32
    vector_rank: I64
    lexical_rank: I64


def fuse_pool(ids: I64, layer_rank: I64, pos: I64, vec: F32, lex: F32, *, mode: str,
              fusion: Fusion, has_vector: bool) -> Fused:
    """Rank, fuse and group a pool (see the module docstring). ``mode`` is the request's
    (``hybrid``, ``vector`` or ``lexical``); ``has_vector`` says the query had a vector."""
    tie = [-layer_rank, ids, pos]  # as hits are ordered: layer, then id
    none = np.zeros(len(ids), dtype=np.int64)
    vrank = ranks(vec, np.isfinite(vec), tie) if has_vector else none
    lrank = ranks(lex, lex > 0, tie) if mode != "vector" else none
    if mode == "lexical":
        fused = lex
    elif mode == "vector":
        fused = np.where(np.isnan(vec), -np.inf, vec).astype(np.float32)
    else:
        fused = fusion.combine(Pool(vec, lex, vrank, lrank))
    order = np.lexsort((ids, -layer_rank, -fused))
    _, first = np.unique(ids[order], return_index=True)
    best = order[np.sort(first)]  # one candidate per id, in fused order
    if mode == "lexical":
        best = best[lex[best] > 0]
    return Fused(best, fused, vrank, lrank)

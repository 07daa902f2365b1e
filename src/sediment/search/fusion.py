"""Ways to merge a vector ranking and a lexical ranking into one score.

The engine gathers a candidate pool (the best chunks of each retriever) and scores every
candidate with both retrievers, so a strategy sees, per candidate, both scores and both
ranks (1-based; 0 when the retriever does not rank it). ``combine`` scores the whole pool
at once.

The default is :class:`ConvexFusion`. On LoCoMo, plain RRF (k = 60) scores *below* BM25 alone
at recall@5, because the weaker dense ranker drags the head of the list down, while the
convex combination of min-max normalised scores beats both retrievers; the measured figures,
with the command behind each, are in docs/quality.md ("What each change is worth"), the one
place they are quoted. This matches Bruch, Gai and Ingber ("An Analysis of Fusion Functions
for Hybrid Retrieval", ACM TOIS 2023): a convex combination of normalised scores beats RRF in
and out of domain, and RRF is sensitive to its k. Scores carry information that ranks throw
away: how far ahead the leader is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Pool:
    """Every candidate's vector and BM25 score and rank (rank 0: not ranked by that side).

    A vector score is NaN when the search has no query vector; a BM25 score is 0 when no
    query term occurs in the chunk.
    """

    vec: F32
    lex: F32
    vrank: I64
    lrank: I64


class Fusion(Protocol):
    @property
    def name(self) -> str: ...

    def combine(self, pool: Pool) -> F32: ...


def _minmax(x: npt.NDArray[np.float64], valid: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    """(x - min) / (max - min) over the valid entries; 0 where invalid; 1 if all are equal."""
    out = np.zeros(len(x), dtype=np.float64)
    if not valid.any():
        return out
    lo, hi = float(x[valid].min()), float(x[valid].max())
    out[valid] = (x[valid] - lo) / (hi - lo) if hi > lo else 1.0
    return out


@dataclass(frozen=True, slots=True)
class ConvexFusion:
    """``w * bm25 / max(bm25) + (1 - w) * minmax(cosine)`` over the candidate pool (default).

    Both scores land on 0..1 per query without any calibration constant; ``lexical_weight``
    0.5 weighs the two sides equally (not tuned to LoCoMo; docs/quality.md has what each
    measured choice is worth). Chunks no query term matches get BM25 0. BM25 is scaled from
    its theoretical minimum, 0, rather than from the pool's (Bruch et al.'s "TM2C2"): in a
    large pool some candidate matches no term, so this is min-max; in a small pool where
    every candidate matches, min-max would give the weakest lexical match 0, as if it
    matched nothing, and show a real hit a fused score of 0.
    """

    lexical_weight: float = 0.5
    name: str = "convex"

    def combine(self, pool: Pool) -> F32:
        w = self.lexical_weight
        vec = pool.vec.astype(np.float64)
        lex = pool.lex.astype(np.float64)
        v = _minmax(vec, np.isfinite(vec))
        has_lex = len(lex) > 0 and float(lex.max()) > 0
        lx = lex / float(lex.max()) if has_lex else np.zeros(len(lex))
        if not np.isfinite(vec).any():
            return lx.astype(np.float32)
        return (w * lx + (1.0 - w) * v).astype(np.float32)


@dataclass(frozen=True, slots=True)
class ReciprocalRankFusion:
    """RRF (Cormack, Clarke and Buettcher, SIGIR 2009): ``sum w / (k + rank)``.

    k = 60 is the paper's constant: it flattens the head of each list so that one
    retriever's first place cannot drown the other's agreement. It needs no score
    calibration, which matters because cosine and BM25 live on unrelated scales.
    """

    k: float = 60.0
    vector_weight: float = 1.0
    lexical_weight: float = 1.0
    name: str = "rrf"

    def combine(self, pool: Pool) -> F32:
        def part(rank: I64, weight: float) -> npt.NDArray[np.float64]:
            return np.where(rank > 0, weight / (self.k + np.maximum(rank, 1)), 0.0)

        out = part(pool.vrank, self.vector_weight) + part(pool.lrank, self.lexical_weight)
        return out.astype(np.float32)


@dataclass(frozen=True, slots=True)
class WeightedFusion:
    """Linear combination of cosine as is and BM25 divided by the pool's best BM25 score."""

    vector_weight: float = 0.7
    lexical_weight: float = 0.3
    name: str = "weighted"

    def combine(self, pool: Pool) -> F32:
        best = float(pool.lex.max()) if len(pool.lex) else 0.0
        lex = pool.lex / best if best > 0 else np.zeros_like(pool.lex)
        vec = np.maximum(np.nan_to_num(pool.vec, nan=0.0), 0.0)
        return (self.vector_weight * vec + self.lexical_weight * lex).astype(np.float32)


FUSIONS = ("convex", "rrf", "weighted")
DEFAULT_FUSION = "convex"


def make_fusion(name: str = DEFAULT_FUSION, *, k: float = 60.0,
                vector_weight: float | None = None,
                lexical_weight: float | None = None) -> Fusion:
    """A strategy by name; weights left None take each strategy's documented default."""
    from sediment.errors import ValidationError

    if name == "convex":
        if vector_weight is not None and lexical_weight is not None:
            total = vector_weight + lexical_weight
            return ConvexFusion(lexical_weight / total if total > 0 else 0.5)
        if vector_weight is not None:
            return ConvexFusion(1.0 - vector_weight)
        return ConvexFusion(0.5 if lexical_weight is None else lexical_weight)
    if name == "rrf":
        return ReciprocalRankFusion(k=k, vector_weight=1.0 if vector_weight is None
                                    else vector_weight,
                                    lexical_weight=1.0 if lexical_weight is None
                                    else lexical_weight)
    if name == "weighted":
        return WeightedFusion(vector_weight=0.7 if vector_weight is None else vector_weight,
                              lexical_weight=0.3 if lexical_weight is None else lexical_weight)
    raise ValidationError(f"unknown fusion {name!r}: expected one of {', '.join(FUSIONS)}")

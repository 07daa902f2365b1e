"""Ways to merge a vector ranking and a lexical ranking into one score.

Each strategy maps per-candidate (vector rank, vector score, lexical rank, lexical score) to
one fused score; ranks are 1-based, ``None`` means the retriever did not return the
candidate. New strategies only need a ``fuse`` method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Fusion(Protocol):
    @property
    def name(self) -> str: ...

    def fuse(self, vec_rank: int | None, vec_score: float | None,
             lex_rank: int | None, lex_score: float | None) -> float: ...


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

    def fuse(self, vec_rank: int | None, vec_score: float | None,
             lex_rank: int | None, lex_score: float | None) -> float:
        total = 0.0
        if vec_rank is not None:
            total += self.vector_weight / (self.k + vec_rank)
        if lex_rank is not None:
            total += self.lexical_weight / (self.k + lex_rank)
        return total


@dataclass(frozen=True, slots=True)
class WeightedFusion:
    """Linear combination of normalised scores: cosine as is, BM25 divided by the best
    BM25 score of the query (set through ``lexical_max``) so both lie in 0..1."""

    vector_weight: float = 0.7
    lexical_weight: float = 0.3
    lexical_max: float = 1.0
    name: str = "weighted"

    def fuse(self, vec_rank: int | None, vec_score: float | None,
             lex_rank: int | None, lex_score: float | None) -> float:
        v = max(vec_score or 0.0, 0.0)
        lex = (lex_score or 0.0) / self.lexical_max if self.lexical_max > 0 else 0.0
        return self.vector_weight * v + self.lexical_weight * lex


def make_fusion(name: str = "rrf", *, k: float = 60.0, vector_weight: float | None = None,
                lexical_weight: float | None = None) -> Fusion:
    from sediment.errors import ValidationError

    if name == "rrf":
        return ReciprocalRankFusion(k=k, vector_weight=1.0 if vector_weight is None
                                    else vector_weight,
                                    lexical_weight=1.0 if lexical_weight is None
                                    else lexical_weight)
    if name == "weighted":
        return WeightedFusion(vector_weight=0.7 if vector_weight is None else vector_weight,
                              lexical_weight=0.3 if lexical_weight is None else lexical_weight)
    raise ValidationError(f"unknown fusion {name!r}: expected 'rrf' or 'weighted'")

"""What a search returns: hits with the versions they hide and the parts of their score."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sediment.format import Chunk
from sediment.store import LayerName


@dataclass(frozen=True, slots=True)
class HiddenVersion:
    layer: LayerName
    chunk: Chunk
    conflict: bool

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer.value, "conflict": self.conflict, **self.chunk.to_dict()}


@dataclass(slots=True)
class Hit:
    layer: LayerName
    chunk: Chunk
    score: float
    vector_score: float | None = None
    vector_rank: int | None = None
    lexical_score: float | None = None
    lexical_rank: int | None = None
    matched_layer: LayerName | None = None
    hidden: list[HiddenVersion] = field(default_factory=list)
    boosts: dict[str, float] = field(default_factory=dict)
    approximate: bool = False

    @property
    def conflicts(self) -> list[HiddenVersion]:
        return [h for h in self.hidden if h.conflict]

    def explanation(self) -> dict[str, Any]:
        return {
            "layer": self.layer.value,
            "matched_layer": (self.matched_layer or self.layer).value,
            "vector_score": self.vector_score,
            "vector_rank": self.vector_rank,
            "bm25_score": self.lexical_score,
            "bm25_rank": self.lexical_rank,
            "fused_score": self.score,
            "approximate": self.approximate,
            "boosts": dict(self.boosts),
            "hidden_versions": [f"{h.layer.value}:{h.chunk.id}" for h in self.hidden],
        }

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"layer": self.layer.value, "score": self.score,
                               **self.chunk.to_dict()}
        out["conflicts"] = [h.to_dict() for h in self.conflicts]
        if explain:
            out["explain"] = self.explanation()
        return out


Reranker = Callable[[list[Hit]], list[Hit]]
"""A domain hook (memory recency, KCP triggers) that may re-score and reorder hits."""

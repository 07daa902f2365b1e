"""Multi-factor relevance (the seed's model), each factor on an absolute 0-1 scale.

relevance = w_s * semantic + w_r * recency + w_u * usefulness + w_t * type match, with
weights from the settings (0.40 / 0.25 / 0.20 / 0.15 by default).

- semantic: ``0.8 * max(0, cosine) + 0.2 * coverage`` where coverage is the share of the
  query's distinct terms found in the item. Cosine is clipped at 0, not min-max normalised
  within one result list (which would give every top hit 1.0 and make ``min_score``
  meaningless). With no usable embedding (embedder failed, or the item was stored without
  one) semantic is the coverage alone.
- recency: ``exp(-decay * iterations since stored)``, decay 0.1 (0.05 for skills).
- usefulness: 0.5, +0.1 per helpful vote, -0.15 per unhelpful one, clamped to 0-1.
- type match: 1.0 when the item's type was asked for, else 0.5 (1.0 when no type was).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from sediment.context.settings import ContextSettings

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset({
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "is", "are", "was", "were",
    "be", "it", "this", "that", "with", "as", "at", "by", "from", "what", "when", "how", "did",
    "do", "does", "i", "you", "we", "they", "he", "she"})
COSINE_SHARE = 0.8


def terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def coverage(query_terms: set[str], item_terms: set[str]) -> float:
    """The share of the query's distinct terms that the item holds."""
    if not query_terms:
        return 0.0
    return len(query_terms & item_terms) / len(query_terms)


def semantic(cosine: float | None, cover: float) -> float:
    if cosine is None:
        return cover
    return COSINE_SHARE * max(0.0, min(1.0, cosine)) + (1 - COSINE_SHARE) * cover


def recency(age: int, is_skill: bool, s: ContextSettings) -> float:
    decay = s.skill_recency_decay if is_skill else s.recency_decay
    return math.exp(-decay * max(0, age))


def usefulness(helpful: int, unhelpful: int) -> float:
    return max(0.0, min(1.0, 0.5 + 0.1 * helpful - 0.15 * unhelpful))


def type_match(item_type: str, wanted: Sequence[str] | None) -> float:
    if not wanted:
        return 1.0
    return 1.0 if item_type in wanted else 0.5


@dataclass(frozen=True, slots=True)
class Factors:
    semantic: float
    recency: float
    usefulness: float
    type_match: float

    def score(self, s: ContextSettings) -> float:
        return (s.semantic_weight * self.semantic + s.recency_weight * self.recency
                + s.usefulness_weight * self.usefulness + s.type_match_weight * self.type_match)

    def explain(self, s: ContextSettings) -> dict[str, dict[str, float]]:
        return {name: {"value": round(v, 4), "weight": w, "contribution": round(v * w, 4)}
                for name, v, w in (("semantic", self.semantic, s.semantic_weight),
                                   ("recency", self.recency, s.recency_weight),
                                   ("usefulness", self.usefulness, s.usefulness_weight),
                                   ("type_match", self.type_match, s.type_match_weight))}

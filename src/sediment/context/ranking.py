"""Multi-factor relevance (the seed's model), each factor on an absolute 0-1 scale.

relevance = w_s * semantic + w_r * recency + w_u * usefulness + w_t * type match, with
weights from the settings (0.40 / 0.25 / 0.20 / 0.15 by default).

- semantic: Sediment's hybrid relevance calibrated with fixed constants, not min-max
  normalised within one result list (which would give every top hit 1.0 and make
  ``min_score`` meaningless): ``0.5 * vector + 0.5 * lexical`` (the default fusion's equal
  weights), where ``vector = clip((cosine - 0.1) / 0.6, 0, 1)`` (a sentence embedder's
  cosine: about 0.1 for unrelated text, 0.7 and above for a paraphrase) and
  ``lexical = bm25 / (bm25 + 5)`` (BM25 saturates: half way at 5, about two rare query
  terms matched). With no vector side (the embedder failed, or the item was stored
  without one) semantic is the lexical part alone.
- recency: ``exp(-decay * iterations since stored)``, decay 0.1 (0.05 for skills).
- usefulness: 0.5, +0.1 per helpful vote, -0.15 per unhelpful one, clamped to 0-1.
- type match: 1.0 when the item's type was asked for, else 0.5 (1.0 when no type was).

Which items are ranked is decided by relevance first (``service.ContextLoop._rank``): the
hybrid search's best ``max_items``, plus items marked helpful within its best
``feedback_reach x max_items`` (1 by default: none); the factors then order that set and
``min_score`` filters it. So with no feedback the items returned are the ones plain search
returns, in another order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sediment.context.settings import ContextSettings

COSINE_FLOOR = 0.1
COSINE_CEIL = 0.7
LEXICAL_HALF = 5.0
LEXICAL_SHARE = 0.5


def semantic(cosine: float | None, lexical: float | None) -> float:
    """The calibrated hybrid relevance (see the module docstring)."""
    lx = max(0.0, lexical or 0.0)
    lex = lx / (lx + LEXICAL_HALF)
    if cosine is None or not math.isfinite(cosine):
        return lex
    vec = max(0.0, min(1.0, (cosine - COSINE_FLOOR) / (COSINE_CEIL - COSINE_FLOOR)))
    return (1 - LEXICAL_SHARE) * vec + LEXICAL_SHARE * lex


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

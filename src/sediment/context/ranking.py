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
- usefulness: 0.5, +0.1 per helpful vote, -0.15 per unhelpful one, clamped to 0-1. A vote
  that names the query it helped with counts ``query_weight`` of a vote: nothing when the
  embedding cosine between the current query and that one is under
  ``feedback_similarity``, rising linearly to a whole vote for the same query, so evidence
  marked for one question does not crowd out another's. Every vote also fades with the
  iterations of its item's run since it was given (:func:`vote_decay`, half of it after
  ``feedback_half_life``), and the helpful votes an item has for a query count at most
  ``VOTE_CAP`` (one vote) however many were given: a loop that asks with one constant
  query (its task) votes for the same query every iteration, and summed, never-fading
  votes let the items that helped early fill every later block (issue 27). Feedback says
  "this helped lately", not "this helped often".
- type match: 1.0 when the item's type was asked for, else 0.5 (1.0 when no type was).

Which items are ranked is decided by relevance first (``service.ContextLoop._rank``): the
``max_items`` best of the hybrid search's best ``max_items`` and every item marked helpful
for a query similar enough to this one, in this iteration of its run (wherever it ranks;
``feedback_lift_iterations``: a loop's next question, asked with the same task, gets
plain search's set), by ``semantic + feedback_gain x weighted votes`` (:func:`select`,
votes capped); plus items marked
helpful with no query within the search's best ``feedback_reach x max_items`` (1 by
default: none). The factors then order that set and ``min_score`` filters it. So with
no feedback the items returned are the ones plain search returns, in another order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from sediment.context.settings import ContextSettings

VOTE_CAP = 1.0
COSINE_FLOOR = 0.1
COSINE_CEIL = 0.7
LEXICAL_HALF = 5.0
LEXICAL_SHARE = 0.5
T = TypeVar("T")


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


def usefulness(helpful: float, unhelpful: float) -> float:
    return max(0.0, min(1.0, 0.5 + 0.1 * helpful - 0.15 * unhelpful))


def query_weight(similarity: float, threshold: float) -> float:
    """How much of a vote given for an earlier query counts for this one: 0 below
    ``threshold`` (an unrelated question's evidence is not this one's), rising linearly
    to a whole vote for the same query."""
    if not math.isfinite(similarity) or similarity < threshold:
        return 0.0
    if threshold >= 1.0:
        return 1.0
    return min(1.0, (similarity - threshold) / (1.0 - threshold))


def vote_decay(age: int, half_life: int) -> float:
    """How much of a vote given ``age`` iterations ago still counts: halved every
    ``half_life`` iterations (0: votes never fade)."""
    if half_life <= 0 or age <= 0:
        return 1.0
    return float(0.5 ** (age / half_life))


def bounded(votes: float) -> float:
    """Helpful votes as ranking counts them: at most ``VOTE_CAP``."""
    return min(VOTE_CAP, max(0.0, votes))


def type_match(item_type: str, wanted: Sequence[str] | None) -> float:
    if not wanted:
        return 1.0
    return 1.0 if item_type in wanted else 0.5


def select(rows: Sequence[tuple[T, float, float]], k: int, s: ContextSettings) -> list[T]:
    """The ``k`` best of ``(row, semantic, weighted helpful votes for similar queries)`` by
    ``semantic + feedback_gain x votes``: evidence marked for a similar question displaces
    the least relevant of the search's best, while with no votes the set is the search's."""
    order = sorted(range(len(rows)),
                   key=lambda i: (-(rows[i][1] + s.feedback_gain * bounded(rows[i][2])), i))
    return [rows[i][0] for i in sorted(order[:k])]


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

"""KCP's re-ranking hook for the search pipeline (``SearchRequest.rerankers``).

It runs after precedence, on every surviving hit (the engine does not cut to k before
rerankers), and changes scores additively, recording each change in ``Hit.boosts``:

- ``kcp.trigger``: a hit whose unit has a trigger the query contains gains
  ``trigger_weight`` times the best score among the hits. The default 1.0 ranks it above
  every hit without a trigger match: a trigger is the manifest author saying "this query
  is for this unit", stronger evidence than word overlap (scale-free, since fused scores
  are tiny under RRF and near 1 under convex fusion). Matching is
  case-insensitive (KCP 4.9) and on whole words, with hyphens, underscores and spaces alike,
  so the trigger ``bearer-token`` matches "how do I get a bearer token".
- ``kcp.superseded``: a hit all of whose units are superseded (KCP 4.8) drops just below the
  best hit of the unit superseding it; when no hit of that unit is present, its score is
  multiplied by ``superseded_factor`` (0.5). Chains (A supersedes B supersedes C) are
  settled newest first.

A chunk that belongs to no unit is left alone. ``load_order`` expands results with their
units' ``depends_on`` prerequisites, in dependency order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sediment.kcp.index import KcpIndex, UnitKey, UnitRecord
from sediment.search import Hit

__all__ = ["KcpReranker", "load_order", "normalize_phrase", "trigger_hits"]

_NON_WORD = re.compile(r"[\W_]+")


def normalize_phrase(text: str) -> str:
    """Lowercase words separated by single spaces; punctuation and ``-``/``_`` split words."""
    return " ".join(_NON_WORD.sub(" ", text.lower()).split())


def trigger_hits(query: str, triggers: Iterable[str]) -> list[str]:
    """The triggers that occur in ``query`` as whole words."""
    padded = f" {normalize_phrase(query)} "
    return [t for t in triggers if (p := normalize_phrase(t)) and f" {p} " in padded]


@dataclass(frozen=True, slots=True)
class KcpReranker:
    index: KcpIndex
    query: str
    trigger_weight: float = 1.0
    superseded_factor: float = 0.5

    def __call__(self, hits: list[Hit]) -> list[Hit]:
        if not hits or not self.index.units:
            return hits
        top = max(abs(h.score) for h in hits) or 1.0
        matched: dict[UnitKey, bool] = {}
        for h in hits:
            keys = self.index.by_chunk.get(h.id, ())
            for k in keys:
                if k not in matched:
                    matched[k] = bool(trigger_hits(self.query, self.index.units[k].triggers))
            if any(matched[k] for k in keys):
                self._adjust(h, "kcp.trigger", h.score + self.trigger_weight * top)
        self._demote_superseded(hits)
        return sorted(hits, key=lambda h: -h.score)

    def _demote_superseded(self, hits: list[Hit]) -> None:
        by_depth: dict[int, list[tuple[Hit, list[UnitKey]]]] = {}
        for h in hits:
            keys = self.index.by_chunk.get(h.id, [])
            if keys and all(self.index.is_superseded(k) for k in keys):
                depth = max(self._depth(k) for k in keys)
                by_depth.setdefault(depth, []).append((h, keys))
        best = self._best(hits)
        for depth in sorted(by_depth):
            for h, keys in by_depth[depth]:
                successors = [s for k in keys for s in self.index.superseded_by.get(k, ())]
                present = [best[s] for s in successors if s in best]
                if present:
                    ceiling = min(present)
                    if h.score >= ceiling:
                        self._adjust(h, "kcp.superseded",
                                     ceiling - max(abs(ceiling) * 1e-6, 1e-12))
                else:
                    self._adjust(h, "kcp.superseded", h.score * self.superseded_factor)
            best = self._best(hits)

    def _best(self, hits: Sequence[Hit]) -> dict[UnitKey, float]:
        best: dict[UnitKey, float] = {}
        for h in hits:
            for k in self.index.by_chunk.get(h.id, ()):
                best[k] = max(best.get(k, h.score), h.score)
        return best

    def _depth(self, key: UnitKey) -> int:
        """How many supersessions stand above ``key`` (cycles counted once)."""
        depth, frontier, seen = 0, [key], {key}
        while True:
            nxt = [s for k in frontier for s in self.index.superseded_by.get(k, ())
                   if s not in seen]
            if not nxt:
                return depth
            seen.update(nxt)
            frontier = nxt
            depth += 1

    @staticmethod
    def _adjust(hit: Hit, name: str, new_score: float) -> None:
        hit.boosts[name] = hit.boosts.get(name, 0.0) + (new_score - hit.score)
        hit.score = new_score


def load_order(hits: Iterable[Hit], index: KcpIndex) -> list[UnitRecord]:
    """The units of ``hits`` in rank order, each after its transitive prerequisites."""
    keys: list[UnitKey] = []
    for h in hits:
        keys.extend(index.by_chunk.get(h.id, ()))
    return index.load_order(keys)

"""Rank metrics over binary relevance: hit rate at k ("recall@k") and nDCG@10.

``recall@k`` follows the LoCoMo convention in ``../shared/datasets/locomo/README.md``: a
question counts as found at k when any of its evidence items is among the first k results.
nDCG@10 rewards every evidence item and its position: gain 1 / log2(rank + 1), divided by the
gain of the ideal ranking (all evidence first).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

KS = (1, 5, 10, 20)


def hit_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    return 1.0 if any(r in relevant for r in ranked[:k]) else 0.0


def ndcg_at(ranked: Sequence[str], relevant: Collection[str], k: int = 10) -> float:
    """Each evidence item gains once, at its first rank: several chunks of one expected
    section (the project set labels chunks by section) must not score above the ideal."""
    seen: set[str] = set()
    dcg = 0.0
    for i, r in enumerate(ranked[:k]):
        if r in relevant and r not in seen:
            seen.add(r)
            dcg += 1.0 / math.log2(i + 2)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


@dataclass(slots=True)
class Scores:
    """Running sums of every metric over the questions of one group."""

    n: int = 0
    hits: dict[int, float] = field(default_factory=lambda: dict.fromkeys(KS, 0.0))
    ndcg: float = 0.0

    def add(self, ranked: Sequence[str], relevant: Collection[str]) -> None:
        self.n += 1
        for k in KS:
            self.hits[k] += hit_at(ranked, relevant, k)
        self.ndcg += ndcg_at(ranked, relevant, 10)

    def row(self) -> dict[str, float]:
        d = max(self.n, 1)
        out = {f"recall@{k}": self.hits[k] / d for k in KS}
        out["ndcg@10"] = self.ndcg / d
        out["n"] = float(self.n)
        return out


def summarise(groups: Mapping[str, Scores]) -> dict[str, dict[str, float]]:
    return {name: s.row() for name, s in groups.items()}

"""KCP's query vocabulary over manifests (KCP 15.2-15.4), without loading unit content.

Each search term (case-insensitive) scores 5 when it is a substring of one of a unit's
triggers, 3 when it is a substring of its intent, and 1 when it is a substring of its id or
path (``match_reason`` says ``id`` when the id holds it, else ``path``). Units scoring 0 are
left out unless there are no terms (an empty query matches every unit). Filters:
``audience`` (``devops`` and ``operator`` are the same reader, KCP 4.6), ``scope``, and
deprecated units excluded by default (15.2). Ties keep declaration order, manifests in
discovery order; the default limit is 5 (15.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sediment.kcp.catalog import CatalogEntry
from sediment.kcp.model import Unit

__all__ = ["DEFAULT_LIMIT", "QueryMatch", "audience_matches", "query_units", "score_unit"]

DEFAULT_LIMIT = 5
_SAME_READER = {"devops": "operator"}


@dataclass(frozen=True, slots=True)
class QueryMatch:
    entry: CatalogEntry
    unit: Unit
    score: int
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"unit_id": self.unit.id, "score": self.score,
                "path": self.entry.unit_file(self.unit.path), "intent": self.unit.intent,
                "token_estimate": self.unit.token_estimate,
                "summary_unit": self.unit.summary_unit, "match_reason": list(self.reasons),
                "project": self.entry.manifest.project, "manifest": self.entry.path,
                "uri": f"knowledge://{self.entry.slug}/{self.unit.id}",
                "source_manifest": None}


def audience_matches(audience: Sequence[str], wanted: str) -> bool:
    want = _SAME_READER.get(wanted, wanted)
    return any(_SAME_READER.get(a, a) == want for a in audience)


def score_unit(unit: Unit, terms: Sequence[str]) -> tuple[int, tuple[str, ...]]:
    score, reasons = 0, []
    triggers = [t.lower() for t in unit.triggers]
    intent, uid, path = unit.intent.lower(), unit.id.lower(), unit.path.lower()
    for raw in terms:
        term = raw.lower().strip()
        if not term:
            continue
        if any(term in t for t in triggers):
            score += 5
            reasons.append("trigger")
        if term in intent:
            score += 3
            reasons.append("intent")
        if term in uid or term in path:
            score += 1
            reasons.append("id" if term in uid else "path")
    return score, tuple(dict.fromkeys(reasons))


def query_units(entries: Sequence[CatalogEntry], terms: Sequence[str], *,
                audience: str | None = None, scope: str | None = None,
                exclude_deprecated: bool = True, limit: int = DEFAULT_LIMIT
                ) -> list[QueryMatch]:
    wanted = [t for t in terms if t.strip()]
    found: list[tuple[int, int, int, QueryMatch]] = []
    for m, entry in enumerate(entries):
        for unit in entry.manifest.units:
            if audience and not audience_matches(unit.audience, audience):
                continue
            if (scope and unit.scope != scope) or (exclude_deprecated and unit.deprecated):
                continue
            score, reasons = score_unit(unit, wanted)
            if wanted and score == 0:
                continue
            found.append((-score, m, unit.index, QueryMatch(entry, unit, score, reasons)))
    found.sort(key=lambda x: x[:3])
    return [x[3] for x in found[:limit]]

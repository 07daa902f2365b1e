"""What a delta layer would change: additions, overrides, conflicts, pending proposals.

A reviewer reads this before accepting anything (RFC 13, 15.5). Conflicts follow RFC 12 and
DESIGN.md: the same id with different content in base or user, or near-duplicate content
(cosine similarity of the stored vectors at or above a threshold) that says something
different. Identical content under another id is a duplicate, not a conflict. Vectors are
compared as stored, so no embedder is needed and nothing is re-embedded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import ValidationError
from sediment.format import Chunk, LayerFile
from sediment.review._common import event_mask, require_layer
from sediment.review.decisions import ProposalView, list_proposals
from sediment.store import LayerName, LayerSet

DEFAULT_THRESHOLD = 0.9
MAX_MATCHES = 3
"""Near-duplicates reported per delta chunk (the most similar first)."""
_BLOCK = 65_536


@dataclass(frozen=True, slots=True)
class DeltaChunk:
    """A context chunk of the delta, where its id also lives, and its proposal status."""

    chunk: Chunk
    status: str  # new | overrides-base | same-as-base | accepted | conflicts-user
    proposal: str | None

    def to_dict(self) -> dict[str, Any]:
        return {**self.chunk.to_dict(), "status": self.status, "proposal": self.proposal}


@dataclass(frozen=True, slots=True)
class Match:
    """A delta chunk against a base or user chunk: a conflict or a duplicate."""

    type: str  # same-id | near-duplicate | duplicate
    delta: Chunk
    layer: LayerName
    other: Chunk
    similarity: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "delta": self.delta.to_dict(), "layer": self.layer.value,
                "other": self.other.to_dict(),
                "similarity": None if self.similarity is None else round(self.similarity, 6)}


@dataclass(frozen=True, slots=True)
class DiffReport:
    paths: dict[str, str | None]
    threshold: float
    chunks: tuple[DeltaChunk, ...]
    conflicts: tuple[Match, ...]
    duplicates: tuple[Match, ...]
    pending: tuple[ProposalView, ...]
    events: int

    def with_status(self, *statuses: str) -> list[DeltaChunk]:
        return [c for c in self.chunks if c.status in statuses]

    def to_dict(self) -> dict[str, Any]:
        added = self.with_status("new")
        overrides = self.with_status("overrides-base", "same-as-base")
        return {
            "layers": self.paths,
            "threshold": self.threshold,
            "summary": {"delta_chunks": len(self.chunks), "events": self.events,
                        "added": len(added), "overrides": len(overrides),
                        "accepted": len(self.with_status("accepted")),
                        "conflicts": len(self.conflicts), "duplicates": len(self.duplicates),
                        "pending_proposals": len(self.pending)},
            "added": [c.to_dict() for c in added],
            "overrides": [c.to_dict() for c in overrides],
            "accepted": [c.chunk.id for c in self.with_status("accepted")],
            "conflicts": [m.to_dict() for m in self.conflicts],
            "duplicates": [m.to_dict() for m in self.duplicates],
            "pending_proposals": [p.to_dict() for p in self.pending],
        }


def _unit_rows(f: LayerFile, positions: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    rows = np.asarray(f.embeddings[f.rows[positions]], dtype=np.float32)
    if f.element_type == "i8":
        rows = rows * np.float32(f.quant_scale)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: npt.NDArray[np.float32] = np.divide(rows, norms, out=np.zeros_like(rows),
                                             where=norms > 0)
    return out


def _context_positions(f: LayerFile) -> npt.NDArray[np.int64]:
    """Chunk-table positions of every non-event chunk."""
    return np.flatnonzero(~event_mask(f)).astype(np.int64)


def _near(delta: LayerFile, d_pos: npt.NDArray[np.int64], other: LayerFile,
          threshold: float) -> list[tuple[int, int, float]]:
    """(delta position, other position, cosine) for pairs at or above ``threshold``."""
    o_pos = _context_positions(other)
    if not len(d_pos) or not len(o_pos) or delta.dim != other.dim:
        return []
    q = _unit_rows(delta, d_pos)
    found: list[tuple[int, int, float]] = []
    for start in range(0, len(o_pos), _BLOCK):
        block = o_pos[start:start + _BLOCK]
        sims = q @ _unit_rows(other, block).T
        for i, j in zip(*np.nonzero(sims >= threshold), strict=True):
            found.append((int(d_pos[i]), int(block[j]), float(sims[i, j])))
    return found


def diff_layers(layerset: LayerSet, threshold: float = DEFAULT_THRESHOLD) -> DiffReport:
    """Compare the delta layer of ``layerset`` with its base and user layers."""
    if not 0.0 < threshold <= 1.0:
        raise ValidationError(f"threshold {threshold} must be in (0, 1] (cosine similarity)")
    layerset.schema()  # layers compared together must share a schema (RFC 8.3)
    delta = require_layer(layerset, LayerName.DELTA).file
    lower = [(n, la.file) for n in (LayerName.USER, LayerName.BASE)
             if (la := layerset.layer(n)) is not None]
    statuses = {s.context_id: s.status for s in layerset.proposals().values()}
    d_pos = _context_positions(delta)
    entries: list[DeltaChunk] = []
    conflicts: list[Match] = []
    for pos in d_pos.tolist():
        c = delta.chunk_at(pos)
        versions = {n: v for n, f in lower if (v := f.get(c.id)) is not None}
        user, base = versions.get(LayerName.USER), versions.get(LayerName.BASE)
        if user is not None:
            status = "accepted" if user.content == c.content else "conflicts-user"
        elif base is not None:
            status = "same-as-base" if base.content == c.content else "overrides-base"
        else:
            status = "new"
        entries.append(DeltaChunk(c, status, statuses.get(c.id)))
        conflicts.extend(Match("same-id", c, n, v, None) for n, v in versions.items()
                         if v.content != c.content)
    duplicates: list[Match] = []
    for name, f in lower:
        per_delta: dict[int, list[tuple[float, int]]] = {}
        for dp, op, sim in _near(delta, d_pos, f, threshold):
            if int(f.ids[op]) != int(delta.ids[dp]):  # same id: compared above
                per_delta.setdefault(dp, []).append((sim, op))
        for dp, hits in per_delta.items():
            c = delta.chunk_at(dp)
            hits.sort(key=lambda h: (-h[0], h[1]))
            for sim, op in hits[:MAX_MATCHES]:
                other = f.chunk_at(op)
                kind = "duplicate" if other.content == c.content else "near-duplicate"
                (duplicates if kind == "duplicate" else conflicts).append(
                    Match(kind, c, name, other, sim))
    pending = tuple(list_proposals(layerset, "pending"))
    paths = {n.value: str(p) if layerset.layer(n) is not None else None
             for n in (LayerName.BASE, LayerName.USER, LayerName.DELTA)
             if (p := layerset.paths.get(n)) is not None}
    return DiffReport(paths, threshold, tuple(entries), tuple(conflicts), tuple(duplicates),
                      pending, delta.chunk_count - len(d_pos))

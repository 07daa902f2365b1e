"""What a delta layer would change: additions, overrides, conflicts, pending proposals.

A reviewer reads this before accepting anything (RFC 13, 15.5). Conflicts follow RFC 12:
the same id with different content in base or user, or near-duplicate content (cosine
similarity of the stored vectors at or above a threshold) that says something different.
Identical content under another id is a duplicate, not a conflict. A user version whose
first source is the delta chunk is a reviewer's copy of it (accepted, perhaps with
edits), not a conflict: agents cannot write the user layer. Vectors are compared as
stored, so no embedder is needed and nothing is re-embedded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import ValidationError
from sediment.format import Chunk
from sediment.review._common import require_layer, require_present
from sediment.review.decisions import ProposalView, list_proposals
from sediment.store import LayerName, LayerSet, LayerStore
from sediment.store.events import is_meta_kind
from sediment.store.rules import writers

DEFAULT_THRESHOLD = 0.9
MAX_MATCHES = 3
"""Near-duplicates reported per delta chunk (the most similar first)."""


@dataclass(frozen=True, slots=True)
class DeltaChunk:
    """A context chunk of the delta, where its id also lives, and its proposal status."""

    chunk: Chunk
    status: str  # new | overrides-base | same-as-base | accepted | conflicts-user
    proposal: str | None
    actor: str | None = None
    """Who wrote it (its ``meta.write`` event), beside the RFC's ``author``."""

    def to_dict(self) -> dict[str, Any]:
        return {**self.chunk.to_dict(), "actor": self.actor, "status": self.status,
                "proposal": self.proposal}


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


def _delta(store: LayerStore) -> tuple[list[Chunk], npt.NDArray[np.float32]]:
    """The delta's context chunks and their vectors (the delta is what is reviewed: small
    beside base)."""
    chunks: list[Chunk] = []
    vectors: list[npt.NDArray[np.float32]] = []
    for c, v in store.chunks(LayerName.DELTA):
        if not is_meta_kind(c.kind):
            chunks.append(c)
            vectors.append(v)
    dim = len(vectors[0]) if vectors else 0
    return chunks, (np.vstack(vectors).astype(np.float32) if vectors
                    else np.zeros((0, dim), np.float32))


def _where(store: LayerStore, present: list[LayerName]) -> dict[str, str | None]:
    """Where base, user and delta live (None: absent)."""
    files = store.layer_files()
    if files is not None:
        return {n.value: str(p) if n in present else None
                for n in (LayerName.BASE, LayerName.USER, LayerName.DELTA)
                if (p := files.paths.get(n)) is not None}
    return {n.value: store.location(n) if n in present else None
            for n in (LayerName.BASE, LayerName.USER, LayerName.DELTA)}


def without_local(store: LayerStore) -> LayerStore:
    """The set ``sediment diff`` compares: the local layer (an actor's own notes) is not
    reviewed. Over layer files, a set without it; another backend's ``diff_layers`` reads
    only base, user and delta anyway."""
    files = store.layer_files()
    if files is None:
        return store
    kept: dict[LayerName, Path | None] = {n: p for n, p in files.paths.items()
                                         if n is not LayerName.LOCAL}
    return LayerSet(kept)


def diff_layers(layerset: LayerStore, threshold: float = DEFAULT_THRESHOLD) -> DiffReport:
    """Compare the delta layer of ``layerset`` (either backend) with its base and user
    layers. The delta is held in memory; each backend finds the near-duplicates in base
    and user itself (``LayerStore.nearest``: arrays of the file, or a query)."""
    if not 0.0 < threshold <= 1.0:
        raise ValidationError(f"threshold {threshold} must be in (0, 1] (cosine similarity)")
    compared = [LayerName.BASE, LayerName.USER, LayerName.DELTA]
    layerset.schema(compared)  # layers compared together must share a schema (RFC 8.3)
    files = layerset.layer_files()
    if files is not None:
        require_layer(files, LayerName.DELTA)
    else:
        require_present(layerset, LayerName.DELTA)
    present = layerset.present(compared)
    lower = [n for n in (LayerName.USER, LayerName.BASE) if n in present]
    statuses = {s.context_id: s.status for s in layerset.proposals().values()}
    delta, d_vecs = _delta(layerset)
    written = writers(layerset.events([LayerName.DELTA, LayerName.LOCAL]))
    entries: list[DeltaChunk] = []
    conflicts: list[Match] = []
    for c in delta:
        versions = {n: v for n in lower if (v := layerset.chunk(n, c.id)) is not None}
        user, base = versions.get(LayerName.USER), versions.get(LayerName.BASE)
        reviewed = user is not None and user.sources[:1] == (c.id,)
        if user is not None:
            status = "accepted" if user.content == c.content or reviewed else "conflicts-user"
        elif base is not None:
            status = "same-as-base" if base.content == c.content else "overrides-base"
        else:
            status = "new"
        entries.append(DeltaChunk(c, status, statuses.get(c.id), written.get(c.id)))
        conflicts.extend(Match("same-id", c, n, v, None) for n, v in versions.items()
                         if v.content != c.content and not (reviewed and n is LayerName.USER))
    duplicates: list[Match] = []
    ids = [c.id for c in delta]  # the same id was compared above
    for name in lower:
        found = layerset.nearest(name, d_vecs, ids, threshold, MAX_MATCHES) if delta else []
        for c, hits in zip(delta, found, strict=True):
            for sim, other in hits:
                kind = "duplicate" if other.content == c.content else "near-duplicate"
                (duplicates if kind == "duplicate" else conflicts).append(
                    Match(kind, c, name, other, sim))
    pending = tuple(list_proposals(layerset, "pending"))
    summary = layerset.summary(LayerName.DELTA, max_ids=0)
    events = (summary.chunks if summary is not None else len(delta)) - len(delta)
    return DiffReport(_where(layerset, present), threshold, tuple(entries), tuple(conflicts),
                      tuple(duplicates), pending, events)

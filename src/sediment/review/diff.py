"""What a delta layer would change: additions, overrides, conflicts, pending proposals.

A reviewer reads this before accepting anything (RFC 13, 15.5). Conflicts follow RFC 12 and
DESIGN.md: the same id with different content in base or user, or near-duplicate content
(cosine similarity of the stored vectors at or above a threshold) that says something
different. Identical content under another id is a duplicate, not a conflict. Vectors are
compared as stored, so no embedder is needed and nothing is re-embedded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import ValidationError
from sediment.format import Chunk, LayerFile
from sediment.review._common import event_mask, is_event, require_layer, require_present
from sediment.review.decisions import ProposalView, list_proposals
from sediment.store import LayerName, LayerSet, LayerStore

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


@dataclass(frozen=True, slots=True)
class _Block:
    """Some context chunks of one layer: their ids, their unit vectors, and the chunks."""

    ids: npt.NDArray[np.int64]
    unit: npt.NDArray[np.float32]
    chunk: Callable[[int], Chunk]
    """The chunk at a row of this block."""


def _unit(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: npt.NDArray[np.float32] = np.divide(rows, norms, out=np.zeros_like(rows),
                                             where=norms > 0)
    return out


def _at(f: LayerFile, positions: npt.NDArray[np.int64]) -> Callable[[int], Chunk]:
    return lambda j: f.chunk_at(int(positions[j]))


def _file_blocks(f: LayerFile) -> Iterator[_Block]:
    """A layer file's context chunks, read as arrays (no chunk is decoded until asked)."""
    positions = np.flatnonzero(~event_mask(f)).astype(np.int64)
    for start in range(0, len(positions), _BLOCK):
        pos = positions[start:start + _BLOCK]
        rows = np.asarray(f.embeddings[f.rows[pos]], dtype=np.float32)
        if f.element_type == "i8":
            rows = rows * np.float32(f.quant_scale)
        yield _Block(f.ids[pos].astype(np.int64), _unit(rows), _at(f, pos))


def _store_blocks(store: LayerStore, name: LayerName) -> Iterator[_Block]:
    """Any backend's layer, streamed (``LayerStore.chunks``), one block in memory at once."""
    chunks: list[Chunk] = []
    vectors: list[npt.NDArray[np.float32]] = []

    def block() -> _Block:
        held = list(chunks)
        return _Block(np.array([c.id for c in held], dtype=np.int64),
                      _unit(np.vstack(vectors).astype(np.float32)), held.__getitem__)

    for c, v in store.chunks(name):
        if is_event(c):
            continue
        chunks.append(c)
        vectors.append(v)
        if len(chunks) == _BLOCK:
            yield block()
            chunks.clear()
            vectors.clear()
    if chunks:
        yield block()


def _blocks(store: LayerStore, name: LayerName) -> Iterator[_Block]:
    if isinstance(store, LayerSet):
        layer = store.layer(name)
        return _file_blocks(layer.file) if layer is not None else iter(())
    return _store_blocks(store, name)


def _where(store: LayerStore, present: list[LayerName]) -> dict[str, str | None]:
    """Where base, user and delta live (None: absent)."""
    if isinstance(store, LayerSet):
        return {n.value: str(p) if n in present else None
                for n in (LayerName.BASE, LayerName.USER, LayerName.DELTA)
                if (p := store.paths.get(n)) is not None}
    return {n.value: store.location(n) if n in present else None
            for n in (LayerName.BASE, LayerName.USER, LayerName.DELTA)}


def diff_layers(layerset: LayerStore, threshold: float = DEFAULT_THRESHOLD) -> DiffReport:
    """Compare the delta layer of ``layerset`` (either backend) with its base and user
    layers. Only the delta is held in memory; base and user are compared block by block."""
    if not 0.0 < threshold <= 1.0:
        raise ValidationError(f"threshold {threshold} must be in (0, 1] (cosine similarity)")
    compared = [LayerName.BASE, LayerName.USER, LayerName.DELTA]
    layerset.schema(compared)  # layers compared together must share a schema (RFC 8.3)
    if isinstance(layerset, LayerSet):
        require_layer(layerset, LayerName.DELTA)
    else:
        require_present(layerset, LayerName.DELTA)
    present = layerset.present(compared)
    lower = [n for n in (LayerName.USER, LayerName.BASE) if n in present]
    statuses = {s.context_id: s.status for s in layerset.proposals().values()}
    parts = list(_blocks(layerset, LayerName.DELTA))
    delta = [p.chunk(j) for p in parts for j in range(len(p.ids))]
    d_ids = np.concatenate([p.ids for p in parts]) if parts else np.zeros(0, np.int64)
    d_unit = np.vstack([p.unit for p in parts]) if parts else np.zeros((0, 0), np.float32)
    entries: list[DeltaChunk] = []
    conflicts: list[Match] = []
    for c in delta:
        versions = {n: v for n in lower if (v := layerset.chunk(n, c.id)) is not None}
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
    for name in lower:
        per_delta: dict[int, list[tuple[float, int, Chunk]]] = {}
        for b in (_blocks(layerset, name) if len(delta) else ()):
            if b.unit.shape[1] != d_unit.shape[1]:
                break
            sims = d_unit @ b.unit.T
            for i, j in zip(*np.nonzero(sims >= threshold), strict=True):
                if int(b.ids[j]) != int(d_ids[i]):  # same id: compared above
                    per_delta.setdefault(int(i), []).append(
                        (float(sims[i, j]), int(b.ids[j]), b.chunk(int(j))))
        for i, hits in per_delta.items():
            c = delta[i]
            hits.sort(key=lambda h: (-h[0], h[1]))
            for sim, _, other in hits[:MAX_MATCHES]:
                kind = "duplicate" if other.content == c.content else "near-duplicate"
                (duplicates if kind == "duplicate" else conflicts).append(
                    Match(kind, c, name, other, sim))
    pending = tuple(list_proposals(layerset, "pending"))
    summary = layerset.summary(LayerName.DELTA, max_ids=0)
    events = (summary.chunks if summary is not None else len(delta)) - len(delta)
    return DiffReport(_where(layerset, present), threshold, tuple(entries), tuple(conflicts),
                      tuple(duplicates), pending, events)

"""State changes as append-only ``meta.*`` event chunks, and the folds that read them.

Nothing is ever updated in place: a proposal, a decision, a supersession or a forget is a
new chunk whose ``sources`` point at its subject, and its ``content`` is a small JSON
object. The current state is a fold over the events of every layer, so history stays
auditable (DESIGN.md, "State changes are events"; RFC 11.2).

Event kinds and their JSON content:

- ``meta.proposal_event``: ``{"event": "propose", "context_id": N, "target": "user",
  "from_layer": "delta"}``; sources ``[N]``. Written by ``agents_context_propose``.
- ``meta.proposal_decision``: ``{"event": "accept" | "reject", "proposal_id": P,
  "context_id": N, "reason": "...", "promoted_id": M | null}``; sources ``[P, N]``.
- ``meta.supersede``: ``{"event": "supersede", "old_id": A, "new_id": B}``; sources ``[A, B]``.
- ``meta.forget``: ``{"event": "forget", "context_id": N, "reason": "..."}``; sources ``[N]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sediment.format import Chunk
from sediment.store.layers import LayerName

PROPOSAL = "meta.proposal_event"
DECISION = "meta.proposal_decision"
SUPERSEDE = "meta.supersede"
FORGET = "meta.forget"
EVENT_KINDS = (PROPOSAL, DECISION, SUPERSEDE, FORGET)


def event_content(**fields: Any) -> str:
    """Deterministic JSON for an event's content."""
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def parse_event(chunk: Chunk) -> dict[str, Any]:
    """The event's JSON object; an unreadable one (e.g. another tool's) yields ``{}``."""
    try:
        value = json.loads(chunk.content)
    except (json.JSONDecodeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(slots=True)
class Event:
    layer: LayerName
    chunk: Chunk
    data: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.chunk.kind


@dataclass(slots=True)
class ProposalState:
    proposal: Event
    context_id: int
    status: str = "pending"  # pending | accepted | rejected
    decisions: list[Event] = field(default_factory=list)

    @property
    def id(self) -> int:
        return self.proposal.chunk.id


def iter_events(chunks: Iterable[tuple[LayerName, Chunk]]) -> Iterator[Event]:
    """Events among ``chunks``, in (created_at, id) order."""
    found = [Event(layer, c, parse_event(c)) for layer, c in chunks if c.kind in EVENT_KINDS]
    found.sort(key=lambda e: (e.chunk.created_at_ms, e.chunk.id))
    yield from found


def _subject(e: Event, key: str, position: int) -> int | None:
    value = e.data.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    ids = [s for s in e.chunk.sources if isinstance(s, int)]
    return ids[position] if len(ids) > position else None


def fold_proposals(events: Iterable[Event]) -> dict[int, ProposalState]:
    """Proposal id -> its state after every decision so far (the first decision sticks)."""
    out: dict[int, ProposalState] = {}
    for e in events:
        if e.kind == PROPOSAL:
            cid = _subject(e, "context_id", 0)
            if cid is not None:
                out[e.chunk.id] = ProposalState(e, cid)
        elif e.kind == DECISION:
            pid = _subject(e, "proposal_id", 0)
            state = out.get(pid) if pid is not None else None
            if state is None:
                continue
            state.decisions.append(e)
            if state.status == "pending":
                verdict = e.data.get("event")
                state.status = {"accept": "accepted", "reject": "rejected"}.get(
                    str(verdict), state.status)
    return out


def hidden_ids(events: Iterable[Event]) -> set[int]:
    """Chunk ids that search should leave out: superseded or forgotten."""
    out: set[int] = set()
    for e in events:
        if e.kind == SUPERSEDE:
            old = _subject(e, "old_id", 0)
            if old is not None:
                out.add(old)
        elif e.kind == FORGET:
            cid = _subject(e, "context_id", 0)
            if cid is not None:
                out.add(cid)
    return out


MEMORY_KIND_PREFIX = "memory."
MEMORY_EVENT_PREFIX = "meta.memory"


def about_memories(chunk: Chunk, memory_ids: set[int]) -> bool:
    """True for an event that records memory state (``sediment.memory``): its own
    ``meta.memory*`` kinds, or a supersede or forget of a memory chunk. Compaction keeps
    these by default, with the memory versions they hide."""
    if chunk.kind.startswith(MEMORY_EVENT_PREFIX):
        return True
    return chunk.kind in (SUPERSEDE, FORGET) and any(
        isinstance(s, int) and s in memory_ids for s in chunk.sources)

"""State changes as append-only ``meta.*`` event chunks, and the folds that read them.

This module owns the event kinds (nothing else spells ``"meta."``), the content of each
event, the proposal lifecycle (propose -> accept | reject) and the folds that turn events
into state.

Nothing is ever updated in place: a proposal, a decision, a supersession or a forget is a
new chunk whose ``sources`` point at its subject, and its ``content`` is a small JSON
object. The current state is a fold over the events of every layer, so history stays
auditable (RFC 11.2).

Event kinds and their JSON content:

- ``meta.proposal_event``: ``{"event": "propose", "context_id": N, "target": "user",
  "from_layer": "delta", "actor": A}``; sources ``[N]``. Written by
  ``agents_context_propose``.
- ``meta.proposal_decision``: ``{"event": "accept" | "reject", "proposal_id": P,
  "context_id": N, "reason": "...", "promoted_id": M | null, "reviewer": R}``; sources
  ``[P, N]``.
- ``meta.supersede``: ``{"event": "supersede", "old_id": A, "new_id": B}``; sources ``[A, B]``.
- ``meta.forget``: ``{"event": "forget", "context_id": N, "reason": "..."}``; sources ``[N]``.
- ``meta.write``: ``{"event": "write", "actor": A, "layer": L}``; sources: the ids one
  commit wrote. The RFC's ``author`` says human or mcp; this says who
  (``sediment.store.rules``).

An accept is two commits: the copy into user, then the decision into delta. A proposal whose
chunk already has its identical copy in user is accepted (the copy is what search shows),
even before its decision is recorded; ``ProposalState.recorded`` says whether it was, and
accepting again records it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.format import Chunk, LayerFile, Source
from sediment.format.arrays import distinct
from sediment.store.layers import LayerName

META_PREFIX = "meta."
"""Kinds with this prefix are Sediment's own events: never context, never user-chosen."""
PROPOSAL = META_PREFIX + "proposal_event"
DECISION = META_PREFIX + "proposal_decision"
SUPERSEDE = META_PREFIX + "supersede"
FORGET = META_PREFIX + "forget"
WRITE = META_PREFIX + "write"
"""Who wrote a commit's chunks (``sediment.store.rules``)."""
EVENT_KINDS = (PROPOSAL, DECISION, SUPERSEDE, FORGET, WRITE)
VERDICTS = {"accept": "accepted", "reject": "rejected"}
CLOSED_BY = {SUPERSEDE: "superseded", FORGET: "withdrawn"}
"""What a pending proposal becomes when its author supersedes or forgets its chunk."""
PROPOSAL_EVENT_KINDS = (PROPOSAL, DECISION, *CLOSED_BY)
"""The kinds :func:`fold_proposals` reads: a store may read only these for the queue."""


def is_meta_kind(kind: str) -> bool:
    return kind.startswith(META_PREFIX)


def kind_mask(f: LayerFile, match: Callable[[str], bool]) -> npt.NDArray[np.bool_]:
    """Which rows of ``f``'s chunk table have a kind ``match`` accepts; each distinct kind
    string is decoded and tested once, then one vectorised pass marks the rows."""
    kinds = f.records["kind"]
    wanted = [s for s in distinct(kinds).tolist() if match(f.string(int(s)))]
    return np.isin(kinds, np.asarray(wanted, dtype=kinds.dtype))


@dataclass(frozen=True, slots=True)
class EventChunk:
    """An event to append: its kind, JSON content and the ids it is about."""

    kind: str
    content: str
    sources: tuple[Source, ...]


def event_content(**fields: Any) -> str:
    """Deterministic JSON for an event's content."""
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def event_data(chunk: Chunk) -> dict[str, Any] | None:
    """The JSON object ``chunk`` holds; None when it holds none (not JSON, nested past
    Python's parser, or not an object: another tool's event)."""
    try:
        value = json.loads(chunk.content)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def parse_event(chunk: Chunk) -> dict[str, Any]:
    """The event's JSON object; an unreadable one (e.g. another tool's) yields ``{}``."""
    return event_data(chunk) or {}


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
    status: str = "pending"  # pending | accepted | rejected | superseded | withdrawn
    decisions: list[Event] = field(default_factory=list)
    recorded: bool = True
    """False when accepted only by its copy in user (the decision commit did not happen)."""

    @property
    def id(self) -> int:
        return self.proposal.chunk.id


def proposal_event(context_id: int, from_layer: LayerName, *, copied: bool,
                   actor: str | None = None) -> EventChunk:
    """The event an agent's proposal appends to delta; ``actor`` is who proposed it."""
    return EventChunk(PROPOSAL, event_content(
        event="propose", context_id=context_id, target="user", from_layer=from_layer.value,
        copied_to_delta=copied, **({"actor": actor} if actor else {})), (context_id,))


def decision_event(verdict: str, context_id: int, proposal_id: int | None, reason: str,
                   from_layer: LayerName, promoted: bool,
                   reviewer: str | None = None, edited: bool = False) -> EventChunk:
    """A human's accept or reject (of a proposal, or a promote without one); ``reviewer``
    names the person when an adapter knows it (the web page's signed-in reviewer); ``edited``
    marks an accept whose user copy is the reviewer's edited version, not the agent's text."""
    content = event_content(
        event=verdict, proposal_id=proposal_id, context_id=context_id, reason=reason,
        promoted_id=context_id if promoted else None, from_layer=from_layer.value,
        to_layer="user" if promoted else None,
        via="proposal" if proposal_id is not None else "promote",
        **({"reviewer": reviewer} if reviewer else {}), **({"edited": True} if edited else {}))
    sources: tuple[Source, ...] = ((context_id,) if proposal_id is None
                                   else (proposal_id, context_id))
    return EventChunk(DECISION, content, sources)


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


def fold_proposals(events: Iterable[Event], *,
                   copied_to_user: Callable[[int], bool] | None = None,
                   ) -> dict[int, ProposalState]:
    """Proposal id -> its state after every decision so far (the first decision sticks).

    ``copied_to_user(context_id)`` tells whether user holds the accepted copy of a chunk; a
    pending proposal whose copy is there is accepted, not yet ``recorded``. A pending
    proposal whose chunk its author superseded (a newer proposal replaced it) or forgot is
    ``superseded`` or ``withdrawn``: nothing is left to decide.
    """
    out: dict[int, ProposalState] = {}
    closed: dict[int, str] = {}
    for e in events:
        if e.kind in CLOSED_BY:
            cid = hidden_by(e.kind, e.data, e.chunk.sources)
            if cid is not None:
                closed.setdefault(cid, CLOSED_BY[e.kind])
        elif e.kind == PROPOSAL:
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
                state.status = VERDICTS.get(str(e.data.get("event")), state.status)
    if copied_to_user is not None:
        for state in out.values():
            if state.status == "pending" and copied_to_user(state.context_id):
                state.status, state.recorded = "accepted", False
    for state in out.values():
        if state.status == "pending" and state.context_id in closed:
            state.status = closed[state.context_id]
    return out


def pending_by_chunk(states: Iterable[ProposalState]) -> dict[int, int]:
    """Chunk id -> the proposal still waiting for a decision to be recorded."""
    return {s.context_id: s.id for s in states if s.status == "pending" or not s.recorded}


def find_proposal(states: Sequence[ProposalState], context_id: int) -> ProposalState | None:
    """The pending proposal of ``context_id``, if any (proposing again returns it)."""
    return next((s for s in states if s.context_id == context_id and s.status == "pending"),
                None)


def hidden_by(kind: str, data: Mapping[str, Any], sources: Sequence[object]) -> int | None:
    """The id a supersede (its ``old_id``) or a forget (its ``context_id``) event hides,
    else its first source; None for any other event. The layers, the team server's
    memory rows and a push of them all read hiding through this one rule."""
    key = {SUPERSEDE: "old_id", FORGET: "context_id"}.get(kind)
    if key is None:
        return None
    value = data.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return next((s for s in sources if isinstance(s, int) and not isinstance(s, bool)), None)


def shared_by(kind: str, data: Mapping[str, Any], sources: Sequence[object]) -> int | None:
    """The id a proposal (its ``context_id``, copied to delta) or a promoting decision (its
    ``promoted_id``, copied to user) puts in a shared layer, else its subject among its
    sources; None for any other event (and for a decision that copied nothing)."""
    if kind == PROPOSAL:
        key, position = "context_id", 0
    elif kind == DECISION and data.get("promoted_id") is not None:
        key, position = "promoted_id", -1
    else:
        return None
    value = data.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    ids = [s for s in sources if isinstance(s, int) and not isinstance(s, bool)]
    return ids[position] if ids else None


def hidden_ids(events: Iterable[Event]) -> set[int]:
    """Chunk ids that search should leave out: superseded or forgotten."""
    return {h for e in events
            if (h := hidden_by(e.kind, e.data, e.chunk.sources)) is not None}


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

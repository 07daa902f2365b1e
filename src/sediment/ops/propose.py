"""The propose service behind MCP ``agents_context_propose`` (RFC 11.2).

A proposal is durable state inside the delta layer: a ``meta.proposal_event`` chunk whose
sources name the proposed chunk. A chunk that lives only in local is first copied to delta
under the same id (the copy is recorded in the event; local keeps its chunk), so a reviewer
who only receives the delta layer has everything. Proposing a chunk that already has a
pending proposal returns that proposal instead of recording a second one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sediment.errors import NotFoundError, ValidationError
from sediment.format.ids import check_chunk_id
from sediment.store import AGENT_WRITABLE, LayerName, LayerStore, NewChunk
from sediment.store.events import find_proposal, is_meta_kind, proposal_event
from sediment.store.rules import Reader, is_hidden_kind


@dataclass(frozen=True, slots=True)
class Proposal:
    proposal_id: int
    context_id: int
    from_layer: LayerName
    copied_to_delta: bool
    already_pending: bool


def propose(layerset: LayerStore, context_id: int, *, actor: str) -> Proposal:
    """Record ``actor``'s proposal for the user layer (the only target, RFC 11.2; adapters
    check their input with :class:`~sediment.ops.requests.ProposeRequest`); the pending
    check and the append happen under one lock. Only chunks the actor may read can be
    proposed, and never an event or a memory (a memory's global save is its own
    proposal, made by the memory service)."""
    with layerset.transaction():
        return _propose_locked(layerset, context_id, actor)


def _propose_locked(layerset: LayerStore, context_id: int, actor: str) -> Proposal:
    check_chunk_id(context_id, what="context_id")
    reader = Reader(layerset, actor)
    every = dict(layerset.versions(context_id))
    versions = {n: c for n, c in every.items() if reader.may_read(n, c)}
    source = next((n for n in (LayerName.DELTA, LayerName.LOCAL) if n in versions), None)
    if source is None:
        where = ", ".join(n.value for n in versions) or "no layer you can read"
        raise NotFoundError(f"chunk {context_id} is not in the local or delta layer (found in "
                            f"{where}); only agent-written chunks can be proposed")
    chunk = versions[source]
    if is_meta_kind(chunk.kind):
        raise ValidationError(f"chunk {context_id} is a {chunk.kind} event, not context")
    if is_hidden_kind(chunk.kind):
        raise ValidationError(f"chunk {context_id} is a memory ({chunk.kind}); memories are "
                              "private to their actor: propose one for everyone with "
                              "save_memory scope 'global'")
    pending = find_proposal(list(layerset.proposals().values()), context_id)
    if pending is not None:
        return Proposal(pending.id, context_id, source, False, True)
    schema = layerset.schema()
    dim = schema.dim if schema is not None else 0
    profile = schema.profile if schema is not None else None
    items: list[NewChunk] = []
    vectors: list[np.ndarray] = []
    copied = LayerName.DELTA not in every
    if copied:
        items.append(NewChunk(chunk.kind, chunk.content, chunk.author, chunk.confidence,
                              chunk.sources, chunk.created_at_ms, id=chunk.id))
        vectors.append(layerset.vector(LayerName.LOCAL, chunk.id))
    event = proposal_event(context_id, source, copied=copied, actor=actor)
    items.append(NewChunk(event.kind, event.content, "mcp", 1.0, event.sources))
    vectors.append(np.zeros(dim, dtype=np.float32))
    ids = layerset.append(LayerName.DELTA, items, np.stack(vectors), profile=profile,
                          allowed=AGENT_WRITABLE)
    return Proposal(ids[-1], context_id, source, copied, False)

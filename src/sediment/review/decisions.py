"""Human decisions on what agents learn: list, accept and reject proposals; promote chunks.

A decision is an event, never a deletion (RFC 6.2, 11.2). Accepting copies the proposed
chunk into the user layer under the same id, so the accepted copy overrides the delta
original by precedence, with ``author: human`` and the delta chunk's id first in its
sources; then a ``meta.proposal_decision`` chunk is appended to the delta layer. A
rejection is only the decision chunk, with its reason. The status of a proposal is the fold
of these events (``fold_proposals``); the first decision is final.

The copy and the decision are two commits (a layer set commits one layer at a time). A
crash between them leaves the copy without its decision: the proposal then reads as
accepted (``LayerSet.proposals``: the copy is what search shows), and accepting again
notices the identical copy already in user and records only the decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import NotFoundError, ValidationError
from sediment.format import Chunk
from sediment.review._common import require_present, set_dim
from sediment.store import HUMAN_WRITABLE, LayerName, LayerStore, NewChunk
from sediment.store.events import (
    CLOSED_BY,
    VERDICTS,
    Event,
    ProposalState,
    decision_event,
    is_meta_kind,
    pending_by_chunk,
)
from sediment.store.rules import memory_row, writers

STATUSES = ("pending", "accepted", "rejected", "superseded", "withdrawn")


@dataclass(frozen=True, slots=True)
class DecisionView:
    """One ``meta.proposal_decision`` event."""

    id: int
    verdict: str
    reason: str
    author: str
    created_at_ms: int
    reviewer: str | None = None

    @property
    def decided_by(self) -> str:
        """Who decided: the named reviewer, else the chunk's author (``human``)."""
        return self.reviewer or self.author

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "verdict": self.verdict, "reason": self.reason,
                "author": self.author, "reviewer": self.reviewer, "actor": self.reviewer,
                "created_at_ms": self.created_at_ms}


@dataclass(frozen=True, slots=True)
class ProposalView:
    """A proposal with its folded status and the chunk it proposes."""

    proposal_id: int
    context_id: int
    status: str
    proposed_at_ms: int
    from_layer: str
    chunk: Chunk | None
    decisions: tuple[DecisionView, ...] = ()
    actor: str | None = None
    """Who proposed it (the proposal event's actor, else the actor who wrote the chunk);
    None for proposals made before actors were recorded."""

    def to_dict(self) -> dict[str, Any]:
        return {"proposal_id": self.proposal_id, "context_id": self.context_id,
                "status": self.status, "proposed_at_ms": self.proposed_at_ms,
                "from_layer": self.from_layer, "actor": self.actor,
                "chunk": self.chunk.to_dict() if self.chunk else None,
                "decisions": [d.to_dict() for d in self.decisions]}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one accept, reject or promote did; ``changed`` False means it was a no-op."""

    context_id: int
    action: str  # accepted | rejected | promoted
    changed: bool
    proposal_id: int | None = None
    decision_id: int | None = None
    copied: bool = False
    decided_by: str | None = None
    """On a no-op, who made the decision that was already there."""

    @property
    def message(self) -> str:
        what = (f"proposal {self.proposal_id} (chunk {self.context_id})"
                if self.proposal_id is not None else f"chunk {self.context_id}")
        if not self.changed:
            by = f" by {self.decided_by}" if self.decided_by else ""
            return f"{what} was already {self.action}{by}; nothing to do"
        if self.action == "rejected":
            return f"rejected {what} (decision {self.decision_id})"
        copy = "copied to the user layer" if self.copied else "already in the user layer"
        return f"{self.action} {what}: {copy} (decision {self.decision_id})"

    def to_dict(self) -> dict[str, Any]:
        return {"context_id": self.context_id, "proposal_id": self.proposal_id,
                "action": self.action, "changed": self.changed,
                "decision_id": self.decision_id, "copied": self.copied,
                "decided_by": self.decided_by, "message": self.message}


class AlreadyDecided(ValidationError):
    """A decision on a proposal someone already decided the other way (the first wins)."""

    def __init__(self, message: str, proposal_id: int, status: str, decided_by: str) -> None:
        super().__init__(message)
        self.proposal_id = proposal_id
        self.status = status
        self.decided_by = decided_by


@dataclass(slots=True)
class _Plan:
    """The writes one call will make, gathered before any is made."""

    copies: list[tuple[Chunk, npt.NDArray[np.float32]]] = field(default_factory=list)
    decisions: list[NewChunk] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)


def _decision_view(e: Event) -> DecisionView:
    reviewer = e.data.get("reviewer")
    return DecisionView(e.chunk.id, str(e.data.get("event", "?")), str(e.data.get("reason") or ""),
                        e.chunk.author, e.chunk.created_at_ms,
                        reviewer if isinstance(reviewer, str) and reviewer else None)


def _first_decider(state: ProposalState) -> str:
    first = next((d for d in state.decisions if d.data.get("event") in VERDICTS), None)
    return _decision_view(first).decided_by if first is not None else "human"


def _view(layerset: LayerStore, state: ProposalState,
          written: dict[int, str] | None = None) -> ProposalView:
    found = dict(layerset.versions(state.context_id))
    chunk = found.get(LayerName.DELTA) or found.get(LayerName.LOCAL)
    actor = state.proposal.data.get("actor")
    if not isinstance(actor, str):
        if written is None:
            written = writers(layerset.events((LayerName.DELTA, LayerName.LOCAL)))
        actor = written.get(state.context_id)
    return ProposalView(
        state.id, state.context_id, state.status, state.proposal.chunk.created_at_ms,
        str(state.proposal.data.get("from_layer") or state.proposal.layer.value), chunk,
        tuple(_decision_view(d) for d in state.decisions), actor)


def list_proposals(layerset: LayerStore, status: str | None = None) -> list[ProposalView]:
    """Every proposal of the set in time order, optionally only those with ``status``."""
    if status is not None and status not in STATUSES:
        raise ValidationError(f"status {status!r} must be one of {', '.join(STATUSES)}")
    states = layerset.proposals()
    written = writers(layerset.events((LayerName.DELTA, LayerName.LOCAL)))
    return [_view(layerset, s, written) for s in states.values()
            if status in (None, s.status)]


def _state(layerset: LayerStore, states: dict[int, ProposalState], pid: int) -> ProposalState:
    state = states.get(pid)
    if state is not None:
        return state
    hint = next((s.id for s in states.values() if s.context_id == pid), None)
    extra = (f"; chunk {pid} is proposed by proposal {hint}" if hint is not None
             else "; `sediment proposals list` shows them")
    raise NotFoundError(f"no proposal with id {pid}{extra}")


def get_proposal(layerset: LayerStore, proposal_id: int) -> ProposalView:
    states = layerset.proposals()
    return _view(layerset, _state(layerset, states, proposal_id))


def _unique(ids: Iterable[int]) -> list[int]:
    return list(dict.fromkeys(ids))


def _decision(verdict: str, context_id: int, proposal_id: int | None, reason: str,
              from_layer: LayerName, promoted: bool, reviewer: str | None = None,
              edited: bool = False) -> NewChunk:
    e = decision_event(verdict, context_id, proposal_id, reason, from_layer, promoted, reviewer,
                       edited)
    return NewChunk(e.kind, e.content, "human", 1.0, e.sources)


def _plan_copy(layerset: LayerStore, source: LayerName, context_id: int, plan: _Plan) -> bool:
    """Queue the copy of ``context_id`` into user; False when an identical copy is there."""
    require_present(layerset, source)
    chunk = layerset.chunk(source, context_id)
    if chunk is None:
        raise NotFoundError(f"chunk {context_id} is not in the {source.value} layer "
                            f"({layerset.location(source)})")
    existing = layerset.chunk(LayerName.USER, context_id)
    if existing is not None:
        if existing.content != chunk.content:
            raise ValidationError(
                f"chunk {context_id} already has a different version in the user layer; "
                "layers are append-only, so it cannot be replaced (inspect both with "
                f"`sediment inspect --layer ... --id {context_id}`)")
        return False
    if any(c.id == context_id for c, _ in plan.copies):
        return False
    plan.copies.append((chunk, layerset.vector(source, context_id)))
    return True


def _commit(layerset: LayerStore, plan: _Plan) -> list[Outcome]:
    """Append the copies to user, then the decisions to delta; fill in decision ids."""
    schema = layerset.schema()
    profile = schema.profile if schema is not None else None
    if plan.copies:
        items = [NewChunk(c.kind, c.content, "human", 1.0,
                          (c.id, *(s for s in c.sources if s != c.id)), c.created_at_ms, id=c.id)
                 for c, _ in plan.copies]
        vectors = np.stack([v for _, v in plan.copies])
        layerset.append(LayerName.USER, items, vectors, profile=profile,
                        allowed=HUMAN_WRITABLE)
    if not plan.decisions:
        return plan.outcomes
    zeros = np.zeros((len(plan.decisions), set_dim(layerset)), dtype=np.float32)
    ids = iter(layerset.append(LayerName.DELTA, plan.decisions, zeros, profile=profile,
                               allowed=HUMAN_WRITABLE))
    out = []
    for o in plan.outcomes:
        if o.changed:
            o = Outcome(o.context_id, o.action, True, o.proposal_id, next(ids), o.copied)
        out.append(o)
    return out


def _decide(layerset: LayerStore, proposal_ids: Sequence[int], verdict: str,
            reason: str, reviewer: str | None) -> list[Outcome]:
    with layerset.transaction():
        states = layerset.proposals()
        plan = _Plan()
        action = VERDICTS[verdict]
        opposite = next(v for k, v in VERDICTS.items() if k != verdict)
        for pid in _unique(proposal_ids):
            state = _state(layerset, states, pid)
            if state.status == action and state.recorded:
                plan.outcomes.append(Outcome(state.context_id, action, False, pid,
                                             decided_by=_first_decider(state)))
                continue
            if state.status in CLOSED_BY.values():
                raise ValidationError(
                    f"proposal {pid} (chunk {state.context_id}) was {state.status} by its author "
                    "(a newer proposal replaced it, or the chunk was forgotten): there is nothing "
                    "to decide; nothing was written")
            if state.status == opposite:
                first = next((d for d in state.decisions
                              if d.data.get("event") in ("accept", "reject")), None)
                why = f" ({first.data.get('reason')})" if first and first.data.get("reason") else ""
                who = _first_decider(state)
                raise AlreadyDecided(
                    f"proposal {pid} (chunk {state.context_id}) was already {opposite}{why}, "
                    f"decided by {who}; a "
                    "decision is final: nothing was written. To change course, the agent can "
                    "propose the chunk again, or a human can `sediment promote` it",
                    pid, opposite, who)
            copied = False
            if verdict == "accept":
                copied = _plan_copy(layerset, LayerName.DELTA, state.context_id, plan)
            plan.decisions.append(_decision(verdict, state.context_id, pid, reason,
                                            LayerName.DELTA, verdict == "accept", reviewer))
            plan.outcomes.append(Outcome(state.context_id, action, True, pid, copied=copied))
        return _commit(layerset, plan)


def accept(layerset: LayerStore, proposal_ids: Sequence[int], reason: str = "", *,
           reviewer: str | None = None) -> list[Outcome]:
    """Accept proposals: copy each chunk into user and record the decision in delta.

    Every proposal is checked before anything is written: an unknown or rejected one is an
    error and nothing changes. An already accepted one is a no-op (``changed`` False, with
    ``decided_by``). ``reviewer`` is recorded in the decision when given.
    """
    return _decide(layerset, proposal_ids, "accept", reason.strip(), reviewer)


def reject(layerset: LayerStore, proposal_ids: Sequence[int], reason: str, *,
           reviewer: str | None = None) -> list[Outcome]:
    """Reject proposals with a reason (required); nothing is deleted."""
    if not reason or not reason.strip():
        raise ValidationError("a rejection needs a reason (--reason), so the agent and later "
                              "reviewers know why")
    return _decide(layerset, proposal_ids, "reject", reason.strip(), reviewer)


def promotable(layerset: LayerStore, ids: Sequence[int],
               source: LayerName = LayerName.DELTA) -> list[Chunk]:
    """The chunks ``promote`` would copy; unknown ids are one error listing all of them."""
    if source not in (LayerName.DELTA, LayerName.LOCAL):
        raise ValidationError(f"promote copies from delta or local, not {source.value}")
    wanted = _unique(ids)
    if not wanted:
        raise ValidationError("give at least one chunk id to promote")
    require_present(layerset, source)
    found = {i: c for i in wanted if (c := layerset.chunk(source, i)) is not None
             and not memory_row(source, c.kind)}  # a project memory is no chunk to copy
    missing = [i for i in wanted if i not in found]
    if missing:
        raise NotFoundError(f"not in the {source.value} layer ({layerset.location(source)}): "
                            f"{', '.join(map(str, missing))}")
    events = [i for i, c in found.items() if is_meta_kind(c.kind)]
    if events:
        raise ValidationError(f"these are meta.* event chunks, not context: "
                              f"{', '.join(map(str, events))}")
    return [found[i] for i in wanted]


def promote(layerset: LayerStore, ids: Sequence[int], *, source: LayerName = LayerName.DELTA,
            reason: str = "", reviewer: str | None = None) -> list[Outcome]:
    """Copy chunks from ``source`` (delta or local) into user without waiting for a proposal.

    Each copy is recorded as an accept decision in delta, with ``reviewer`` (who promoted
    it) as every decision records its decider; a pending proposal for the same
    chunk is closed by it. Unknown ids are an error listing all of them, before any write;
    a chunk already identical in user is a no-op.
    """
    with layerset.transaction():
        chunks = promotable(layerset, ids, source)
        pending = pending_by_chunk(layerset.proposals().values())
        plan = _Plan()
        for c in chunks:
            copied = _plan_copy(layerset, source, c.id, plan)
            pid = pending.get(c.id)
            if not copied and pid is None:
                plan.outcomes.append(Outcome(c.id, "promoted", False))
                continue
            plan.decisions.append(_decision("accept", c.id, pid, reason.strip(), source, True,
                                            reviewer))
            plan.outcomes.append(Outcome(c.id, "promoted", True, pid, copied=copied))
        return _commit(layerset, plan)


def accept_edited(layerset: LayerStore, proposal_id: int, content: str,
                  vector: npt.NDArray[np.float32], reason: str = "", *,
                  reviewer: str | None = None) -> Outcome:
    """Accept a proposal with the reviewer's edits: the user layer gets ``content`` (with
    ``vector``, its embedding) under the proposed chunk's id, its sources the delta chunk
    first (the agent's text stays in delta), and the decision is marked ``edited``.

    Unchanged content is a plain :func:`accept`. The proposal must be pending: an edited
    version cannot replace a copy that is already in user (layers are append-only).
    """
    text = content.strip()
    if not text:
        raise ValidationError("the edited content is empty; reject the proposal instead")
    with layerset.transaction():
        states = layerset.proposals()
        state = _state(layerset, states, proposal_id)
        chunk = layerset.chunk(LayerName.DELTA, state.context_id)
        if chunk is not None and chunk.content == text:
            return _decide(layerset, [proposal_id], "accept", reason.strip(), reviewer)[0]
        if state.status != "pending":
            who = _first_decider(state) if state.decisions else "its author"
            raise AlreadyDecided(
                f"proposal {proposal_id} (chunk {state.context_id}) was already "
                f"{state.status}, decided by {who}; nothing was written", proposal_id,
                state.status, who)
        if chunk is None:
            raise NotFoundError(f"chunk {state.context_id} is not in the delta layer")
        if layerset.chunk(LayerName.USER, chunk.id) is not None:
            raise ValidationError(
                f"chunk {chunk.id} already has a version in the user layer; layers are "
                "append-only, so an edited version cannot replace it")
        edited = replace(chunk, content=text)
        plan = _Plan(copies=[(edited, np.asarray(vector, dtype=np.float32))])
        plan.decisions.append(_decision("accept", chunk.id, proposal_id, reason.strip(),
                                        LayerName.DELTA, True, reviewer, edited=True))
        plan.outcomes.append(Outcome(chunk.id, "accepted", True, proposal_id, copied=True))
        return _commit(layerset, plan)[0]

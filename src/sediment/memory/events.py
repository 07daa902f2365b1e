"""Memory state as a fold over ``meta.*`` events (DESIGN.md, "State changes are events").

Each event is a chunk whose content is a small JSON object and whose ``sources`` are the
chunk ids it is about (in the store that holds it):

- ``meta.memory``: a save: ``{"event": "save", "memory_id": N, "actor", "scope", "source",
  "context", "related_to": [...]}``; sources ``[N]``.
- ``meta.supersede`` (shared with the rest of Sediment, so search hides the old version):
  ``{"event": "supersede", "old_id": A, "new_id": B, "reason": "dedup" | "update",
  "similarity", "correction", "signals", "actor"}``; sources ``[A, B]``.
- ``meta.forget`` (shared too): ``{"event": "forget", "context_id": N, "actor",
  "reason"}``; sources ``[N]``.
- ``meta.memory_context``: a memory context's definition or change: ``{"event":
  "context", "actor", "name", "description", "priority"}``; no sources.
- ``meta.memory_use``: one flush of recall counts: ``{"event": "use", "actor", "uses":
  {"<id>": [count, last_used_ms], ...}}``; sources the ids counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sediment.memory.model import MemoryRef
from sediment.store.events import FORGET, META_PREFIX, SUPERSEDE

SAVE = META_PREFIX + "memory"
CONTEXT = META_PREFIX + "memory_context"
USE = META_PREFIX + "memory_use"
MEMORY_EVENT_KINDS = (SAVE, CONTEXT, USE, SUPERSEDE, FORGET)
DEFAULT_PRIORITY = 0.5


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as a store returns it: which store, which layer, when, and its JSON."""

    store: str
    layer: str
    id: int
    kind: str
    created_at_ms: int
    data: dict[str, Any]
    sources: tuple[int | str, ...] = ()


@dataclass(slots=True)
class MemoryState:
    actor: str | None = None
    scope: str | None = None
    source: str | None = None
    context: str | None = None
    related_to: list[str] = field(default_factory=list)
    supersedes: MemoryRef | None = None
    superseded_by: MemoryRef | None = None
    supersede_info: dict[str, Any] | None = None
    forgotten: bool = False
    use_count: int = 0
    last_used_ms: int | None = None
    uses: list[tuple[int, int, str]] = field(default_factory=list)
    """(time of the flush, count, actor) for ``show``'s use history."""


@dataclass(slots=True)
class ContextState:
    store: str
    actor: str
    name: str
    description: str = ""
    priority: float = DEFAULT_PRIORITY
    created_at_ms: int = 0


@dataclass(slots=True)
class Fold:
    memories: dict[MemoryRef, MemoryState] = field(default_factory=dict)
    contexts: dict[tuple[str, str, str], ContextState] = field(default_factory=dict)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _subject(e: StoredEvent, key: str, position: int) -> MemoryRef | None:
    value = _int(e.data.get(key))
    if value is None:
        ids = [s for s in e.sources if isinstance(s, int)]
        value = ids[position] if len(ids) > position else None
    return MemoryRef(e.store, value) if value is not None else None


def fold(events: Iterable[StoredEvent]) -> Fold:
    """Current state of every memory and context the events mention (time order)."""
    out = Fold()
    ordered = sorted(events, key=lambda e: (e.created_at_ms, e.store, e.id))

    def state(ref: MemoryRef) -> MemoryState:
        got = out.memories.get(ref)
        if got is None:
            got = out.memories[ref] = MemoryState()
        return got

    for e in ordered:
        d = e.data
        if e.kind == SAVE:
            ref = _subject(e, "memory_id", 0)
            if ref is None:
                continue
            s = state(ref)
            s.actor = str(d.get("actor")) if d.get("actor") else s.actor
            s.scope = str(d.get("scope")) if d.get("scope") else s.scope
            s.source = str(d.get("source")) if d.get("source") else s.source
            ctx = d.get("context")
            s.context = ctx if isinstance(ctx, str) and ctx else None
            rel = d.get("related_to")
            s.related_to = [str(r) for r in rel] if isinstance(rel, list) else []
        elif e.kind == SUPERSEDE:
            old, new = _subject(e, "old_id", 0), _subject(e, "new_id", 1)
            if old is None or new is None:
                continue
            state(old).superseded_by = new
            ns = state(new)
            ns.supersedes = old
            ns.supersede_info = {k: d.get(k) for k in ("reason", "similarity", "correction",
                                                       "signals")}
        elif e.kind == FORGET:
            ref = _subject(e, "context_id", 0)
            if ref is not None:
                state(ref).forgotten = True
        elif e.kind == USE:
            uses = d.get("uses")
            if not isinstance(uses, dict):
                continue
            for key, value in uses.items():
                if not (isinstance(key, str) and key.isdigit() and isinstance(value, list)
                        and len(value) == 2):
                    continue
                count, last = _int(value[0]), _int(value[1])
                if count is None or count <= 0 or last is None:
                    continue
                s = state(MemoryRef(e.store, int(key)))
                s.use_count += count
                s.last_used_ms = max(s.last_used_ms or 0, last)
                s.uses.append((last, count, str(d.get("actor") or "")))
        elif e.kind == CONTEXT:
            actor, name = d.get("actor"), d.get("name")
            if not isinstance(actor, str) or not isinstance(name, str) or not name:
                continue
            key = (e.store, actor, name)
            c = out.contexts.get(key)
            if c is None:
                c = out.contexts[key] = ContextState(e.store, actor, name,
                                                     created_at_ms=e.created_at_ms)
            if isinstance(d.get("description"), str):
                c.description = d["description"]
            prio = d.get("priority")
            if isinstance(prio, int | float) and not isinstance(prio, bool):
                c.priority = float(prio)
    return out

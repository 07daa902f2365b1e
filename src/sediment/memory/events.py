"""Memory state as a fold over ``meta.*`` events.

Each event is a chunk whose content is a small JSON object and whose ``sources`` are the
chunk ids it is about (in the store that holds it):

- ``meta.memory``: a save: ``{"event": "save", "memory_id": N, "actor", "scope", "source",
  "context", "related_to": [...], "handle": "u3"}`` (and ``"origin": {...}`` for an
  imported memory); sources ``[N]``.
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

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sediment.memory.model import MemoryRef
from sediment.store.events import FORGET, META_PREFIX, SUPERSEDE

SAVE = META_PREFIX + "memory"
CONTEXT = META_PREFIX + "memory_context"
USE = META_PREFIX + "memory_use"
MEMORY_EVENT_KINDS = (SAVE, CONTEXT, USE, SUPERSEDE, FORGET)
DEFAULT_PRIORITY = 0.5
HANDLE_RE = re.compile(r"^[upg][1-9][0-9]{0,9}$")


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
    source: str | None = None
    context: str | None = None
    related_to: list[str] = field(default_factory=list)
    supersedes: MemoryRef | None = None
    superseded_by: MemoryRef | None = None
    supersede_info: dict[str, Any] | None = None
    restored_from: MemoryRef | None = None
    forgotten: bool = False
    use_count: int = 0
    last_used_ms: int | None = None
    uses: list[tuple[int, int, str]] = field(default_factory=list)
    """(time of the flush, count, actor) for ``show``'s use history."""
    handle: str | None = None
    """The short id it is called by (``u3``, ``p4``, ``g5``): see :class:`Fold`."""
    origin: dict[str, Any] | None = None
    """Where an imported memory came from (``sediment.interop``), as its save recorded."""


@dataclass(slots=True)
class ContextState:
    description: str = ""
    priority: float = DEFAULT_PRIORITY


@dataclass(slots=True)
class Fold:
    """The state of every memory and context, and the memories' handles.

    A handle is a counter recorded in each memory's save event (``"handle": "u3"``), so an
    agent can say ``u3`` where the stored chunk id, which must stay RFC-valid and unique in
    its layer set, is ``u2147483677``. ``u`` (user scope) and ``p`` (project scope, and an
    agent's proposals) count per owner, who alone can read those memories; ``g`` (global
    memories a human wrote) counts per project, since everyone reads them and their
    events. Events survive purges and compactions, so a handle never moves."""

    memories: dict[MemoryRef, MemoryState] = field(default_factory=dict)
    contexts: dict[tuple[str, str, str], ContextState] = field(default_factory=dict)
    handles: dict[tuple[str, str], MemoryRef] = field(default_factory=dict)
    """(handle, owner, or ``*`` for ``g``) -> the memory."""
    top_handle: dict[tuple[str, str], int] = field(default_factory=dict)
    """(prefix, owner or ``*``) -> the highest number given so far."""

    def next_handle(self, prefix: str, owner: str) -> str:
        space = handle_space(prefix, owner)
        return f"{prefix}{self.top_handle.get((prefix, space), 0) + 1}"


def handle_space(prefix: str, owner: str) -> str:
    """Whose counter a handle prefix uses: the owner's, or everyone's for ``g``."""
    return "*" if prefix == "g" else owner


def as_int(value: Any) -> int | None:
    """``value`` if it is an integer (not a bool), else None: event JSON is untrusted."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _subject(e: StoredEvent, key: str, position: int) -> MemoryRef | None:
    value = as_int(e.data.get(key))
    if value is None:
        ids = [s for s in e.sources if isinstance(s, int)]
        value = ids[position] if len(ids) > position else None
    return MemoryRef(e.store, value) if value is not None else None


def event_key(e: StoredEvent) -> tuple[int, str, int]:
    """Where an event falls in the fold's order: time, then store, then id."""
    return (e.created_at_ms, e.store, e.id)


def fold(events: Iterable[StoredEvent], into: Fold | None = None) -> Fold:
    """Current state of every memory and context the events mention (time order).

    With ``into``, the events are applied on top of an earlier fold (the caller makes sure
    they all come after the events folded there, see :class:`FoldCache`). ``into`` is left
    as it was: a state the events change is copied first, so a reader still holding the
    earlier fold never sees it change under it."""
    out = Fold() if into is None else Fold(dict(into.memories), dict(into.contexts),
                                           dict(into.handles), dict(into.top_handle))
    ordered = sorted(events, key=event_key)
    copied: set[object] = set()

    def state(ref: MemoryRef) -> MemoryState:
        if ref not in copied:
            copied.add(ref)
            got = out.memories.get(ref)
            out.memories[ref] = MemoryState() if got is None else replace(
                got, related_to=list(got.related_to), uses=list(got.uses))
        return out.memories[ref]

    for e in ordered:
        d = e.data
        if e.kind == SAVE:
            ref = _subject(e, "memory_id", 0)
            if ref is None:
                continue
            s = state(ref)
            if d.get("source"):
                s.source = str(d["source"])
            ctx = d.get("context")
            s.context = ctx if isinstance(ctx, str) and ctx else None
            rel = d.get("related_to")
            s.related_to = [str(r) for r in rel] if isinstance(rel, list) else []
            org = d.get("origin")
            s.origin = org if isinstance(org, dict) else None
            back = as_int(d.get("restores"))
            s.restored_from = MemoryRef(e.store, back) if back is not None else None
            handle, owner = d.get("handle"), d.get("actor")
            if isinstance(handle, str) and HANDLE_RE.match(handle) and isinstance(owner, str):
                space = handle_space(handle[0], owner)
                if (handle, space) not in out.handles:
                    out.handles[(handle, space)] = ref
                    s.handle = handle
                    top = (handle[0], space)
                    out.top_handle[top] = max(out.top_handle.get(top, 0), int(handle[1:]))
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
                count, last = as_int(value[0]), as_int(value[1])
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
            if key not in copied:
                copied.add(key)
                had = out.contexts.get(key)
                out.contexts[key] = replace(had) if had is not None else ContextState()
            c = out.contexts[key]
            if isinstance(d.get("description"), str):
                c.description = d["description"]
            prio = d.get("priority")
            if isinstance(prio, int | float) and not isinstance(prio, bool):
                c.priority = float(prio)
    return out


@dataclass(slots=True)
class FoldCache:
    """The fold of one actor's events, kept current by applying only the events added
    since the last look (events never change; layers only grow between compactions).

    A refold from scratch happens when an event known before is gone (a compaction or a
    purge rewrote a layer) or a new event sorts before the last one applied (another
    process's clock); otherwise a save costs a fold of its own events, not of all of them.
    """

    version: object = None
    fold: Fold = field(default_factory=Fold)
    seen: set[tuple[str, str, int]] = field(default_factory=set)
    last: tuple[int, str, int] | None = None

    def update(self, version: object, events: Sequence[StoredEvent]) -> Fold:
        if version == self.version and self.version is not None:
            return self.fold
        fresh = [e for e in events if (e.store, e.layer, e.id) not in self.seen]
        kept = len(events) - len(fresh)
        first = min(map(event_key, fresh), default=None)
        if kept != len(self.seen) or (first is not None and self.last is not None
                                      and first < self.last):
            self.fold, self.seen, self.last, fresh = Fold(), set(), None, list(events)
        if fresh:
            self.fold = fold(fresh, self.fold)
            self.seen.update((e.store, e.layer, e.id) for e in fresh)
            top = max(map(event_key, fresh))
            self.last = top if self.last is None else max(self.last, top)
        self.version = version
        return self.fold

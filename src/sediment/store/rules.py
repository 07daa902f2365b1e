"""The rules every backend and every adapter applies to kinds and actors, in one place.

- **Hidden kinds.** General search, resources and the review queue leave out events
  (``meta.*``) and actors' memories (``memory.<category>.<actor>``): events are state, not
  context, and a memory is private to its actor (read through the memory service).
- **Reserved kinds.** No agent write (``agents_context_write``, ``sediment write``) may
  choose a reserved kind: an event kind would forge a proposal or a decision, a memory kind
  would forge another actor's memory.
- **Actors.** The RFC fixes a chunk's ``author`` to ``human`` or ``mcp``; who the actor was
  is recorded beside it, in a ``meta.write`` event appended in the same commit as the write
  (and in the proposal and decision events). The fold of those events says who wrote each
  chunk (:func:`writers`).
- **Statistics.** A general search's BM25 statistics leave events and memories out
  (:func:`counted_in_statistics`), so both backends rank the same text the same.
- **Visibility.** A chunk an actor wrote to the local layer (their agent's own notes) is
  readable only by that actor; a memory only by its owner (global memories, in user or
  base, by everyone). :func:`private_by_actor` turns the events into the ids another
  actor may not read (the port's ``private_ids``), and every read path (search, get,
  resources, sources shown in the queue) leaves them out; a path that checks chunk by
  chunk asks a :class:`Reader`. A note that was proposed (copied to delta, where the
  queue shows it to everyone) or promoted is no longer private (:func:`shared_ids`):
  hiding its id hid the delta copy and the accepted user copy from everyone but its
  writer. A search
  never names a memory kind (:func:`search_kinds_problem`): memories are read through the
  memory service.
- **Private memories are read by their handle.** A project-scope memory and its events
  (the local layer's ``memory.*`` and ``meta.memory*`` chunks) are read through the memory
  service, by their ``p`` handle, never by a bare chunk id, by their owner either
  (:func:`memory_row`): the team server keeps them outside the project's layers, in rows
  bound to their actor, where a read by id cannot find them, so the layer files answer the
  same absence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Protocol

from sediment.format import Chunk
from sediment.store.events import (
    EVENT_KINDS,
    MEMORY_EVENT_PREFIX,
    MEMORY_KIND_PREFIX,
    META_PREFIX,
    WRITE,
    Event,
    hidden_ids,
    parse_event,
    shared_by,
)
from sediment.store.layers import LayerName

HIDDEN_PREFIXES = (META_PREFIX, MEMORY_KIND_PREFIX)
PRIVATE_LAYERS = (LayerName.LOCAL,)
"""Layers whose chunks belong to the actor who wrote them."""
SHARED_MEMORY_LAYERS = (LayerName.USER, LayerName.BASE)
"""Where a memory is global (accepted by a human), so readable by every actor."""


def is_hidden_kind(kind: str) -> bool:
    """Left out of general search and resources unless asked for by name."""
    return kind.startswith(HIDDEN_PREFIXES)


def shown_kind(kind: str, include_meta: bool = False) -> bool:
    """Whether a search with no kind filter shows a chunk of ``kind`` (events only when
    asked for; memories never: they are read by name, through the memory service)."""
    if kind.startswith(MEMORY_KIND_PREFIX):
        return False
    return include_meta or not kind.startswith(META_PREFIX)


def counted_in_statistics(kind: str) -> bool:
    """Whether a chunk counts in the BM25 statistics (document count, average length,
    document frequencies) of a general search. Neither events (``meta.*``) nor memories
    (``memory.*``) do.

    Both are left out of every general search, so they are not the text it ranks; and
    where they live depends on the backend. The team server keeps an actor's memories and
    the events about them (saves, uses, and the ``meta.supersede`` a correction writes) in
    a table of its own, while the layer files keep them in the local layer beside the
    notes: counting them on one backend only ranked the same query differently on the two
    (defect 8: one correcting ``save_memory`` moved a lexical score from 3.30856 to
    4.26941 on files alone). A narrower rule (events about memories) cannot be decided
    from the kind, since ``meta.supersede`` and ``meta.forget`` serve documents too, and
    would still let a backend's choice of where an event lives move another chunk's
    score; an event's JSON is state, never search text, so no event counts. A search
    that names events or memories by kind counts every chunk, on both backends alike."""
    return not kind.startswith((MEMORY_KIND_PREFIX, META_PREFIX))


def search_kinds_problem(kinds: Iterable[str]) -> str | None:
    """Why a search may not filter on ``kinds`` (None when it may).

    The search service (``sediment search``, ``Store.search``, ``agents_search``, the HTTP
    API, the web page, a persona's ``context.search``) never returns a memory, whoever
    asks, even for the asker's own kind: memories are read through the memory service
    (``recall_memories``, ``sediment memory``, ``Store.recall``), which binds the actor
    itself, and a search by kind would answer differently on the two backends (the team
    server keeps an actor's memories in a table of their own, not in the layers a search
    reads). The memory service's own searches name the kinds below this rule."""
    named = sorted({k for k in kinds if k.startswith(MEMORY_KIND_PREFIX)})
    if not named:
        return None
    return (f"{', '.join(named)}: memories are private to their actor and are not "
            "searched by kind; read them with recall_memories (sediment memory recall)")


def reserved_kind_problem(kind: str) -> str | None:
    """Why an agent may not write ``kind`` (None when it may)."""
    if kind.startswith(META_PREFIX):
        return "'meta.*' kinds are reserved: they record Sediment's own events"
    if kind.startswith(MEMORY_KIND_PREFIX):
        return ("'memory.*' kinds are reserved: memories are saved with save_memory "
                "(sediment memory save), which binds them to their actor")
    return None


def memory_owner(kind: str) -> str | None:
    """The actor a memory kind (``memory.<category>.<actor>``) belongs to, else None."""
    if not kind.startswith(MEMORY_KIND_PREFIX):
        return None
    parts = kind[len(MEMORY_KIND_PREFIX):].split(".", 1)
    return parts[1] if len(parts) == 2 and parts[1] else None


def write_event_data(actor: str, layer: LayerName) -> dict[str, Any]:
    return {"event": "write", "actor": actor, "layer": layer.value}


def writers(events: Iterable[Event]) -> dict[int, str]:
    """Chunk id -> the actor whose write created it (first write wins: ids are never
    reused, so a later event naming the same id cannot take it over)."""
    out: dict[int, str] = {}
    for e in events:
        if e.kind != WRITE:
            continue
        actor = e.data.get("actor")
        if not isinstance(actor, str):
            continue
        for s in e.chunk.sources:
            if isinstance(s, int) and not isinstance(s, bool):
                out.setdefault(s, actor)
    return out


def shared_ids(events: Iterable[Event]) -> set[int]:
    """Ids a proposal or a promote among ``events`` copied to a shared layer: whoever wrote
    them in the local layer, they are everyone's to read (:func:`shared_by`)."""
    return {i for e in events if (i := shared_by(e.kind, e.data, e.chunk.sources)) is not None}


def private_by_actor(events: Iterable[Event]) -> dict[str, set[int]]:
    """Per actor, the ids of local-layer chunks that are theirs alone: another actor may
    not read them (:func:`others_ids`; a trusted local command, actor None, reads them
    all). Computed once per state of a layer (:class:`HiddenSets`), which takes out the
    ids any layer's proposals and promotes shared (:func:`shared_ids`).

    An event in the local layer that names an actor is that actor's too: the
    ``meta.write`` naming the ids they wrote, and on the layer files the events of their
    project memories (the save with its handle, the ``meta.supersede`` of a correction
    with the words it changed, forgets, uses), which are as private as the memory."""
    out: dict[str, set[int]] = {}
    for e in events:
        if e.layer not in PRIVATE_LAYERS:
            continue
        who = e.data.get("actor")
        if not isinstance(who, str):
            continue
        mine = out.setdefault(who, set())
        mine.add(e.chunk.id)
        if e.kind == WRITE:
            mine.update(s for s in e.chunk.sources
                        if isinstance(s, int) and not isinstance(s, bool))
    return out


def others_ids(by_actor: Mapping[str, AbstractSet[int]], actor: str) -> set[int]:
    """The ids of :func:`private_by_actor` that are not ``actor``'s."""
    out: set[int] = set()
    for who, ids in by_actor.items():
        if who != actor:
            out.update(ids)
    return out


@dataclass(frozen=True, slots=True)
class LayerHiding:
    """What the events of one layer hide from a search: superseded and forgotten ids from
    everyone, and per actor the ids that are theirs alone (:func:`private_by_actor`); and
    the ids its proposals and promotes shared (:func:`shared_ids`), which no layer's
    private ids hide."""

    hidden: frozenset[int]
    by_actor: dict[str, set[int]]
    shared: frozenset[int]

    @classmethod
    def of(cls, layer: LayerName, events: Iterable[Chunk]) -> LayerHiding:
        found = [Event(layer, c, parse_event(c)) for c in events]
        return cls(frozenset(hidden_ids(e for e in found if e.kind in EVENT_KINDS)),
                   private_by_actor(found), frozenset(shared_ids(found)))

    def joined(self, more: LayerHiding) -> LayerHiding:
        """What this layer's events and ``more`` hide together: events only add to what
        is hidden, so a store that reads only a layer's new events joins them on."""
        by_actor = {who: set(ids) for who, ids in self.by_actor.items()}
        for who, ids in more.by_actor.items():
            by_actor.setdefault(who, set()).update(ids)
        return LayerHiding(self.hidden | more.hidden, by_actor, self.shared | more.shared)


class HiddenSets:
    """The ids a search leaves out, remembered per state of each layer: both backends
    fold a layer's events once per version of it (a file's stamp, a database layer's
    events generation) and answer each reader from the layers' parts, so a search pays
    for the events once per change of them, not once per query."""

    def __init__(self) -> None:
        self._layers: dict[LayerName, tuple[object, LayerHiding]] = {}
        self._answers: dict[tuple[object, ...], frozenset[int]] = {}

    def version(self, layer: LayerName) -> object:
        """The version of ``layer`` last folded (None: never)."""
        got = self._layers.get(layer)
        return None if got is None else got[0]

    def fold(self, layer: LayerName, version: object, events: Iterable[Chunk], *,
             onto: bool = False) -> None:
        """Remember what ``events`` hide in ``layer`` as of ``version``; ``onto``: they are
        the events added since the version folded last (:meth:`LayerHiding.joined`)."""
        hiding = LayerHiding.of(layer, events)
        got = self._layers.get(layer)
        if onto and got is not None:
            hiding = got[1].joined(hiding)
        self._layers[layer] = (version, hiding)

    def drop(self, layers: Iterable[LayerName]) -> None:
        for name in layers:
            self._layers.pop(name, None)

    def answer(self, layers: Sequence[LayerName], actor: str | None) -> frozenset[int]:
        """Ids a search of ``layers`` (those folded) by ``actor`` leaves out; None (a
        trusted local command) reads every actor's."""
        parts = [(n, *self._layers[n]) for n in layers if n in self._layers]
        key = (actor, *((n, v) for n, v, _ in parts))
        got = self._answers.get(key)
        if got is None:
            out: set[int] = set()
            for _, _, h in parts:
                out |= h.hidden
            out |= self._private(parts, actor)
            if len(self._answers) >= 256:
                self._answers.clear()
            got = self._answers[key] = frozenset(out)
        return got

    def private(self, layers: Sequence[LayerName], actor: str | None) -> frozenset[int]:
        """The ids another actor's events in ``layers`` (those folded; all present, since
        a proposal in delta shares a local note) make theirs alone: what ``actor`` may not
        read by id (None reads everything)."""
        return frozenset(self._private([(n, *self._layers[n]) for n in layers
                                        if n in self._layers], actor))

    @staticmethod
    def _private(parts: Sequence[tuple[LayerName, object, LayerHiding]],
                 actor: str | None) -> set[int]:
        if actor is None:
            return set()
        out: set[int] = set()
        for _, _, h in parts:
            out |= others_ids(h.by_actor, actor)
        for _, _, h in parts:
            out -= h.shared
        return out


def memory_row(layer: LayerName, kind: str) -> bool:
    """Whether a chunk of ``kind`` in ``layer`` is a project-scope memory or one of its
    events: what the team server keeps in its ``memories`` table, not in the layers."""
    return layer in PRIVATE_LAYERS and kind.startswith((MEMORY_KIND_PREFIX,
                                                        MEMORY_EVENT_PREFIX))


def readable(actor: str | None, layer: LayerName, chunk: Chunk,
             private: AbstractSet[int] = frozenset()) -> bool:
    """May ``actor`` read this version of a chunk by its id? ``private`` is
    the port's ``private_ids``. A project-scope memory reads as absent to everyone
    (:func:`memory_row`): its owner reads it through the memory service."""
    if memory_row(layer, chunk.kind):
        return False
    owner = memory_owner(chunk.kind)
    if owner is not None and layer not in SHARED_MEMORY_LAYERS and owner != actor:
        return False
    if chunk.kind.startswith(MEMORY_KIND_PREFIX) and owner is None:
        return layer in SHARED_MEMORY_LAYERS
    return not (layer in PRIVATE_LAYERS and chunk.id in private)


class _Private(Protocol):
    def private_ids(self, actor: str | None) -> AbstractSet[int]: ...


class Reader:
    """What one actor may read of one store, chunk by chunk: :func:`readable` with the
    private ids read from the store once, on first need (a layer that is not private never
    needs them; every layer's events count, since a proposal in delta shares a local
    note). Meant for one request: it does not see writes made after that."""

    def __init__(self, store: _Private, actor: str | None) -> None:
        self.store, self.actor = store, actor
        self._private: AbstractSet[int] | None = None

    def may_read(self, layer: LayerName, chunk: Chunk) -> bool:
        if layer in PRIVATE_LAYERS and self._private is None:
            self._private = self.store.private_ids(self.actor)
        return readable(self.actor, layer, chunk, self._private or frozenset())

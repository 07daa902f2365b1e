"""The memory store on Sediment's layer files (the first ``MemoryStore``).

- ``user`` scope: the actor's own layer file, ``<data dir>/actors/<actor>/AGENTS.user.db``
  (ids shown as ``u<N>``). It follows the actor across projects. The use counts of these
  memories go to ``AGENTS.local.db`` beside it, so a flush never invalidates the derived
  search indexes of the memories' file.
- ``project`` scope: this project's local layer, the owner recorded in the kind (``p<N>``).
- ``global``: the project's human-governed user layer (and base, after a compaction); an
  agent's global save goes to the delta layer with a proposal event and becomes global
  when a human accepts it (``sediment review accept``), which keeps its id.

The project's layers share one id space (RFC: ids are unique in a layer set), so ``p<N>``
names one chunk whatever layer holds it. An actor's file numbers from its own range
(``store.ids.ACTOR_IDS``), so a ``u`` memory's chunk id is no project chunk's either (files
written before the ranges numbered from 2^31 like the project: they read as before, and new
memories take ids from the actor range).
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import SchemaMismatchError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.format.profile import (
    describe_profile,
    new_element_type,
    profile_differences,
    unit_vectors,
)
from sediment.memory.events import MEMORY_EVENT_KINDS, StoredEvent
from sediment.memory.model import MemoryRef, Scope, actor_kinds, parse_kind
from sediment.memory.store import (
    PLACE_OF_SCOPE,
    Candidate,
    NewEvent,
    NewMemory,
    Place,
    StoredMemory,
    append_to_layer,
    layered_memory,
    memory_kinds,
    readable_events,
    search_layers,
    shared_memories,
)
from sediment.search.layer_index import layer_index
from sediment.store import LayerName, LayerSet
from sediment.store.atomic import atomic_write
from sediment.store.derived import derived
from sediment.store.events import event_data
from sediment.store.ids import ACTOR_IDS
from sediment.store.rules import SHARED_MEMORY_LAYERS

ACTOR_FILE = "AGENTS.user.db"
ACTOR_USAGE_FILE = "AGENTS.local.db"
_WHERE = {Place.USER: ("u", LayerName.USER), Place.PROJECT: ("p", LayerName.LOCAL),
          Place.GLOBAL: ("p", LayerName.USER), Place.PROPOSAL: ("p", LayerName.DELTA),
          Place.USER_USAGE: ("u", LayerName.LOCAL)}
_Parsed = tuple[int, str, int, dict[str, Any], tuple[int | str, ...]]
_PerFile = dict[tuple[str, str, frozenset[int]], list[StoredEvent]]
_STORED: weakref.WeakKeyDictionary[LayerFile, _PerFile] = weakref.WeakKeyDictionary()
_PARSED: dict[tuple[str, int, int], _Parsed | None] = {}
"""(file path, chunk id, created_at_ms) -> parsed event: events never change, so a new
version of a file only parses the events it added. Bounded by ``_PARSED_MAX``."""
_PARSED_MAX = 1_000_000


def _stored_events(f: LayerFile, store: str, layer: str) -> list[StoredEvent]:
    """The memory events of a file as the store hands them out, built once per file
    version (a fold asks for every event on each change of the store)."""
    return derived(f, ("memory.stored", store, layer), lambda f: _parse_events(f, store, layer))


def _parse_events(f: LayerFile, store: str, layer: str) -> list[StoredEvent]:
    """Each event is parsed once, not once per file version (``_PARSED``)."""
    names = layer_index(f).kind_names()
    sids = [s for s, n in names.items() if n in MEMORY_EVENT_KINDS]
    got: list[StoredEvent] = []
    if sids:
        pos = np.flatnonzero(np.isin(f.records["kind"], np.asarray(sids, dtype=np.uint32)))
        ids = f.ids[pos].tolist()
        times = f.records["created_at"][pos].tolist()
        path = str(f.path)
        if len(_PARSED) > _PARSED_MAX:
            _PARSED.clear()
        for p, cid, ms in zip(pos.tolist(), ids, times, strict=True):
            key = (path, int(cid), int(ms))
            if key not in _PARSED:
                c = f.chunk_at(p)
                data = event_data(c)
                _PARSED[key] = (c.id, c.kind, c.created_at_ms, data, c.sources) \
                    if data is not None else None
            parsed = _PARSED[key]
            if parsed is not None:
                got.append(StoredEvent(store, layer, *parsed))
    return got


class FileMemoryStore:
    """Memories in the project's layer set and in one layer file per actor."""

    def __init__(self, project: LayerSet, data_dir: Path, *,
                 profile: Mapping[str, Any] | None, dim: int,
                 embedder_metadata: Mapping[str, Any] | None = None,
                 element_type: str | None = None) -> None:
        self.project = project
        self.data_dir = Path(data_dir)
        self.profile = dict(profile) if profile is not None else None
        self.dim = dim
        self.embedder_metadata = dict(embedder_metadata or {})
        self.element_type = element_type or new_element_type(self.profile)
        """What a new memory file stores vectors as: i8 (scale 1/127) for an embedder of
        unit vectors, as the context store does; a file keeps the type it was made with,
        and a project layer the type of its layer set."""
        self._actor_sets: dict[str, LayerSet] = {}

    def actor_path(self, actor: str) -> Path:
        return self.data_dir / "actors" / actor / ACTOR_FILE

    def actor_set(self, actor: str) -> LayerSet:
        if actor not in self._actor_sets:
            path = self.actor_path(actor)
            self._actor_sets[actor] = LayerSet(
                {LayerName.USER: path, LayerName.LOCAL: path.parent / ACTOR_USAGE_FILE},
                lock_timeout=self.project.lock_timeout, ids=ACTOR_IDS)
        return self._actor_sets[actor]

    def _set(self, store: str, actor: str) -> LayerSet:
        return self.actor_set(actor) if store == "u" else self.project

    def transaction(self, place: Place, actor: str) -> AbstractContextManager[None]:
        return self._set(_WHERE[place][0], actor).transaction()

    def append(self, place: Place, actor: str, memories: Sequence[NewMemory],
               events: Sequence[NewEvent]) -> list[MemoryRef]:
        store, layer = _WHERE[place]
        ids = append_to_layer(self._set(store, actor), layer, memories, events, self.dim,
                              profile=self.profile, embedder_metadata=self.embedder_metadata,
                              element_type=self.element_type)
        return [MemoryRef(store, i) for i in ids]

    def version(self) -> Hashable:
        return tuple((str(la.path), la.stamp) for ls in (self.project, *self._actor_sets.values())
                     for la in ls.layers())

    def events(self, actor: str) -> list[StoredEvent]:
        """The events ``actor`` may read: all of their own store's; of the project's, the
        global layers' (everyone's) and what ``readable_events`` leaves them of the local
        and delta layers, as the PostgreSQL store does."""
        out = [e for la in self.actor_set(actor).layers() if la.file.chunk_count
               for e in _stored_events(la.file, "u", la.name.value)]
        shared: frozenset[int] | None = None
        for la in self.project.layers():
            if not la.file.chunk_count:
                continue
            if la.name in SHARED_MEMORY_LAYERS:
                out.extend(_stored_events(la.file, "p", la.name.value))
                continue
            if shared is None:
                shared = frozenset(int(i) for g in self.project.layers(SHARED_MEMORY_LAYERS)
                                   for i in g.file.ids.tolist())
            out.extend(_own_events(la.file, la.name.value, actor, shared))
        return out

    @staticmethod
    def _kinds(ls: LayerSet, name: LayerName) -> list[str]:
        """The memory kinds in one layer of ``ls``."""
        la = ls.layer(name)
        if la is None or not la.file.chunk_count:
            return []
        return [n for n in layer_index(la.file).kind_names().values()
                if parse_kind(n) is not None]

    def _chunks(self, ls: LayerSet, name: LayerName, kinds: Sequence[str] | None = None
                ) -> list[tuple[LayerName, Chunk]]:
        """The memory chunks of one layer (of ``kinds``, else of any memory kind)."""
        kinds = self._kinds(ls, name) if kinds is None else kinds
        la = ls.layer(name)
        if la is None or not kinds:
            return []
        mask = layer_index(la.file).kind_mask(list(kinds), True)
        pos = np.flatnonzero(mask) if mask is not None else np.arange(la.file.chunk_count)
        return [(name, c) for c in la.file.chunks_at(pos)]

    def memories(self, actor: str, scopes: Sequence[Scope]) -> list[StoredMemory]:
        out: list[StoredMemory] = []
        for scope in (Scope.USER, Scope.PROJECT):
            if scope in scopes:
                store, layer = _WHERE[place := PLACE_OF_SCOPE[scope]]
                out.extend(StoredMemory(MemoryRef(store, c.id), place, c)
                           for _, c in self._chunks(self._set(store, actor), layer,
                                                    actor_kinds(actor)))
        if Scope.GLOBAL in scopes:
            out.extend(shared_memories(actor, (
                got for name in (*SHARED_MEMORY_LAYERS, LayerName.DELTA)
                for got in self._chunks(self.project, name))))
        return out

    def get(self, actor: str, ref: MemoryRef) -> StoredMemory | None:
        if ref.store == "u":
            la = self.actor_set(actor).layer(LayerName.USER)
            c = la.file.get(ref.id) if la is not None else None
            if c is None or (p := parse_kind(c.kind)) is None or p[1] != actor:
                return None
            return StoredMemory(ref, Place.USER, c)
        return layered_memory(actor, ref, self.project.get(ref.id))

    def search(self, actor: str, scope: Scope, text: str, vector: npt.NDArray[np.float32],
               categories: Sequence[str], k: int, *, lexical: bool = True
               ) -> list[Candidate]:
        names: tuple[LayerName, ...]
        if scope is Scope.GLOBAL:
            ls, store, names = self.project, "p", SHARED_MEMORY_LAYERS
            kinds = memory_kinds((n for name in names for n in self._kinds(ls, name)),
                                 categories)
        else:
            store, layer = _WHERE[PLACE_OF_SCOPE[scope]]
            ls, names = self._set(store, actor), (layer,)
            kinds = memory_kinds(actor_kinds(actor), categories)
        layers = [la for la in ls.layers(names) if la.file.chunk_count]
        if not layers or not kinds:
            return []
        for la in layers:
            if self.profile is not None and la.profile is not None \
                    and profile_differences(la.profile, self.profile):
                raise SchemaMismatchError(
                    f"layer {la.path} was embedded with {describe_profile(la.profile)} but "
                    f"the active embedder is {describe_profile(self.profile)}: memories are "
                    "searched with the embedder that wrote them")
        return search_layers(ls, store, names, kinds, text, vector, k, lexical=lexical,
                             normalised=all(unit_vectors(la.profile) for la in layers))

    def purge(self, actor: str, refs: Sequence[MemoryRef]) -> int:
        """Remove the content of ``refs`` that are ``actor``'s own memory chunks (never
        an event, another actor's memory, or the base layer): the store binds the actor
        itself, whatever the caller passes."""
        removed = 0
        for store in ("u", "p"):
            drop = {r.id for r in refs if r.store == store}
            if not drop:
                continue
            ls = self._set(store, actor)
            with ls.transaction():
                for la in ls.layers():
                    if la.name is LayerName.BASE:
                        continue
                    mine = {i for i in drop if (c := la.file.get(i)) is not None
                            and (p := parse_kind(c.kind)) is not None and p[1] == actor}
                    removed += _rewrite_without(la.file, la.path, mine)
        return removed


def _own_events(f: LayerFile, layer: str, actor: str, shared: frozenset[int]
                ) -> list[StoredEvent]:
    """The events of a project layer ``actor`` may read (see ``FileMemoryStore.events``),
    built once per file version and actor."""
    per_file = _STORED.setdefault(f, {})
    key = (layer, actor, shared)
    if key not in per_file:
        if len(per_file) > 64:
            per_file.clear()
        per_file[key] = readable_events(_stored_events(f, "p", layer), actor, shared)
    return per_file[key]


def _rewrite_without(f: LayerFile, path: Path, drop: set[int]) -> int:
    """Rewrite ``path`` without the chunks ``drop`` names; ids stay used (high water)."""
    ids = f.ids.astype(np.int64)
    keep = np.flatnonzero(~np.isin(ids, np.asarray(sorted(drop), dtype=np.int64)))
    gone = f.chunk_count - len(keep)
    if not gone:
        return 0
    md: dict[str, Any] = dict(f.metadata or {})
    md["id_high_water"] = max(int(md.get("id_high_water") or 0), int(ids.max()))
    matrix = np.asarray(f.embeddings[f.rows[keep]]) if len(keep) else \
        np.zeros((0, f.dim), dtype=np.int8 if f.element_type == "i8" else np.float32)
    data = encode_layer(f.chunks_at(keep), matrix, dim=f.dim, element_type=f.element_type,
                        quant_scale=f.quant_scale if f.element_type == "i8" else None,
                        metadata=md)
    atomic_write(path, data)
    return gone

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
from dataclasses import replace
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
from sediment.memory.events import MEMORY_EVENT_KINDS, USE, StoredEvent
from sediment.memory.model import CATEGORIES, MemoryRef, Scope, actor_kinds, parse_kind
from sediment.memory.store import (
    Candidate,
    NewEvent,
    NewMemory,
    Place,
    StoredMemory,
    layered_memory,
)
from sediment.search import SearchRequest, search
from sediment.search.layer_index import layer_index
from sediment.store import LayerName, LayerSet, NewChunk
from sediment.store.atomic import atomic_write
from sediment.store.derived import derived
from sediment.store.events import event_data
from sediment.store.ids import ACTOR_IDS

ACTOR_FILE = "AGENTS.user.db"
ACTOR_USAGE_FILE = "AGENTS.local.db"
_WHERE = {Place.USER: ("u", LayerName.USER), Place.PROJECT: ("p", LayerName.LOCAL),
          Place.GLOBAL: ("p", LayerName.USER), Place.PROPOSAL: ("p", LayerName.DELTA),
          Place.USER_USAGE: ("u", LayerName.LOCAL)}
_GLOBAL_LAYERS = (LayerName.USER, LayerName.BASE)
_Parsed = tuple[int, str, int, dict[str, Any], tuple[int | str, ...]]
_PerFile = dict[tuple[Hashable, ...], list[StoredEvent]]
_STORED: weakref.WeakKeyDictionary[LayerFile, _PerFile] = weakref.WeakKeyDictionary()
_PARSED: dict[tuple[str, int, int], _Parsed | None] = {}
"""(file path, chunk id, created_at_ms) -> parsed event: events never change, so a new
version of a file only parses the events it added. Bounded by ``_PARSED_MAX``."""
_PARSED_MAX = 1_000_000


def _file_events(f: LayerFile) -> list[_Parsed]:
    """The memory events of a file, parsed once per event (not once per file version)."""
    return derived(f, ("memory.events",), _parse_events)


def _parse_events(f: LayerFile) -> list[_Parsed]:
    names = layer_index(f).kind_names()
    sids = [s for s, n in names.items() if n in MEMORY_EVENT_KINDS]
    got: list[_Parsed] = []
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
                got.append(parsed)
    return got


def _stored_events(f: LayerFile, store: str, layer: str) -> list[StoredEvent]:
    """The memory events of a file as the store hands them out, built once per file
    version (a fold asks for every event on each change of the store)."""
    return derived(f, ("memory.stored", store, layer), lambda f: [
        StoredEvent(store, layer, cid, kind, ms, data, sources)
        for cid, kind, ms, data, sources in _file_events(f)])


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

    # -- where -----------------------------------------------------------------------
    def actor_path(self, actor: str) -> Path:
        return self.data_dir / "actors" / actor / ACTOR_FILE

    def actor_set(self, actor: str) -> LayerSet:
        got = self._actor_sets.get(actor)
        if got is None:
            path = self.actor_path(actor)
            got = self._actor_sets[actor] = LayerSet(
                {LayerName.USER: path, LayerName.LOCAL: path.parent / ACTOR_USAGE_FILE},
                lock_timeout=self.project.lock_timeout, ids=ACTOR_IDS)
        return got

    def _set(self, store: str, actor: str) -> LayerSet:
        return self.actor_set(actor) if store == "u" else self.project

    # -- writing ---------------------------------------------------------------------
    def transaction(self, place: Place, actor: str) -> AbstractContextManager[None]:
        return self._set(_WHERE[place][0], actor).transaction()

    def append(self, place: Place, actor: str, memories: Sequence[NewMemory],
               events: Sequence[NewEvent]) -> list[MemoryRef]:
        store, layer = _WHERE[place]
        ls = self._set(store, actor)
        items: list[NewChunk] = []
        vectors: list[npt.NDArray[np.float32]] = []
        for m in memories:
            items.append(NewChunk(m.kind, m.content, m.author, m.confidence, m.sources))
            vectors.append(np.asarray(m.vector, dtype=np.float32).reshape(-1))
        zero = np.zeros(self.dim, dtype=np.float32)
        for e in events:
            items.append(NewChunk(e.kind, "", e.author, 1.0, tuple(e.subjects), data=e.data))
            vectors.append(zero)
        if not items:
            return []
        ids = ls.append(layer, items, np.stack(vectors), profile=self.profile,
                        embedder_metadata=self.embedder_metadata, allowed=(layer,),
                        element_type=self.element_type)
        return [MemoryRef(store, i) for i in ids[:len(memories)]]

    # -- reading ---------------------------------------------------------------------
    def version(self) -> Hashable:
        return tuple((str(la.path), la.stamp) for ls in (self.project, *self._actor_sets.values())
                     for la in ls.layers())

    def events(self, actor: str) -> list[StoredEvent]:
        """The events ``actor`` may read: all of their own store's; of the project's, the
        global layers' (everyone's) and, in the local and delta layers, their own and
        those no actor wrote. Another actor's use counts there are kept only for global
        memories (everyone sees a global memory's uses), as the PostgreSQL store does."""
        out: list[StoredEvent] = []
        for la in self.actor_set(actor).layers():
            if la.file.chunk_count:
                out.extend(_stored_events(la.file, "u", la.name.value))
        shared: set[int] | None = None
        for la in self.project.layers():
            if not la.file.chunk_count:
                continue
            if la.name in _GLOBAL_LAYERS:
                out.extend(_stored_events(la.file, "p", la.name.value))
                continue
            if shared is None:
                shared = {int(i) for g in self.project.layers(_GLOBAL_LAYERS)
                          for i in g.file.ids.tolist()}
            out.extend(_own_events(la.file, la.name.value, actor, frozenset(shared)))
        return out

    def _chunks(self, ls: LayerSet, name: LayerName, kinds: Sequence[str] | None,
                owner: str | None) -> list[tuple[LayerName, Chunk]]:
        la = ls.layer(name)
        if la is None or not la.file.chunk_count:
            return []
        idx = layer_index(la.file)
        if kinds is None:
            kinds = [n for n in idx.kind_names().values()
                     if (p := parse_kind(n)) is not None and (owner is None or p[1] == owner)]
        if not kinds:
            return []
        mask = idx.kind_mask(list(kinds), True)
        pos = np.flatnonzero(mask) if mask is not None else np.arange(la.file.chunk_count)
        return [(name, c) for c in la.file.chunks_at(pos)]

    def memories(self, actor: str, scopes: Sequence[Scope]) -> list[StoredMemory]:
        own = actor_kinds(actor)
        out: list[StoredMemory] = []
        if Scope.USER in scopes:
            out.extend(StoredMemory(MemoryRef("u", c.id), Place.USER, c, n.value)
                       for n, c in self._chunks(self.actor_set(actor), LayerName.USER, own,
                                                None))
        if Scope.PROJECT in scopes:
            out.extend(StoredMemory(MemoryRef("p", c.id), Place.PROJECT, c, n.value)
                       for n, c in self._chunks(self.project, LayerName.LOCAL, own, None))
        if Scope.GLOBAL in scopes:
            seen: set[int] = set()
            for name in _GLOBAL_LAYERS:
                for n, c in self._chunks(self.project, name, None, None):
                    if c.id not in seen:
                        seen.add(c.id)
                        out.append(StoredMemory(MemoryRef("p", c.id), Place.GLOBAL, c,
                                                n.value))
            for n, c in self._chunks(self.project, LayerName.DELTA, None, actor):
                if c.id not in seen:
                    out.append(StoredMemory(MemoryRef("p", c.id), Place.PROPOSAL, c, n.value))
        return out

    def get(self, actor: str, ref: MemoryRef) -> StoredMemory | None:
        if ref.store == "u":
            la = self.actor_set(actor).layer(LayerName.USER)
            c = la.file.get(ref.id) if la is not None else None
            if c is None or (p := parse_kind(c.kind)) is None or p[1] != actor:
                return None
            return StoredMemory(ref, Place.USER, c, LayerName.USER.value)
        return layered_memory(actor, ref, self.project.versions(ref.id))

    def search(self, actor: str, scope: Scope, text: str, vector: npt.NDArray[np.float32],
               categories: Sequence[str], k: int, *, lexical: bool = True
               ) -> list[Candidate]:
        cats = tuple(c for c in CATEGORIES if c in categories)
        names: tuple[LayerName, ...]
        if scope is Scope.USER:
            ls, store, names = self.actor_set(actor), "u", (LayerName.USER,)
            kinds: list[str] = list(actor_kinds(actor, cats))
        elif scope is Scope.PROJECT:
            ls, store, names = self.project, "p", (LayerName.LOCAL,)
            kinds = list(actor_kinds(actor, cats))
        else:
            ls, store, names = self.project, "p", _GLOBAL_LAYERS
            kinds = sorted({n for name in names if (la := ls.layer(name)) is not None
                            and la.file.chunk_count
                            for n in layer_index(la.file).kind_names().values()
                            if (p := parse_kind(n)) is not None and p[0] in cats})
        layers = [la for la in ls.layers(names) if la.file.chunk_count]
        if not layers or not kinds:
            return []
        for la in layers:
            recorded = la.profile
            if self.profile is not None and recorded is not None:
                diff = profile_differences(recorded, self.profile)
                if diff:
                    raise SchemaMismatchError(
                        f"layer {la.path} was embedded with {describe_profile(recorded)} but "
                        f"the active embedder is {describe_profile(self.profile)}: memories "
                        "are searched with the embedder that wrote them")
        normalised = all(unit_vectors(la.profile) for la in layers)
        request = SearchRequest(text=text if lexical else None, k=k, kinds=tuple(kinds),
                                layers=names, mode="hybrid" if lexical else "vector")
        result = search(ls, request, np.asarray(vector, dtype=np.float32),
                        normalised=normalised)
        # an i8 row is a unit vector to within rounding: its dot product with the query can
        # pass 1.0 by a hair, which a cosine cannot
        return [Candidate(MemoryRef(store, h.id), min(float(h.vector_score or 0.0), 1.0),
                          float(h.lexical_score or 0.0), float(h.score))
                for h in result.hits]

    # -- purge -----------------------------------------------------------------------
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
                    removed += _rewrite_without(la.file, la.path, _owned(la.file, drop, actor))
        return removed


def _own_events(f: LayerFile, layer: str, actor: str, shared: frozenset[int]
                ) -> list[StoredEvent]:
    """The events of a project layer ``actor`` may read (see ``FileMemoryStore.events``),
    built once per file version and actor."""
    per_file = _STORED.get(f)
    if per_file is None:
        per_file = _STORED[f] = {}
    key = ("p", layer, actor, shared)
    got = per_file.get(key)
    if got is not None:
        return got
    if len(per_file) > 64:
        per_file.clear()
    got = []
    for e in _stored_events(f, "p", layer):
        who = e.data.get("actor")
        if not isinstance(who, str) or who == actor:
            got.append(e)
        elif e.kind == USE and isinstance(uses := e.data.get("uses"), dict):
            mine = {k: v for k, v in uses.items()
                    if isinstance(k, str) and k.isdigit() and int(k) in shared}
            if mine:
                got.append(replace(e, data={**e.data, "uses": mine},
                                   sources=tuple(int(k) for k in mine)))
    per_file[key] = got
    return got


def _owned(f: LayerFile, ids: set[int], actor: str) -> set[int]:
    """Those of ``ids`` that name a memory chunk of ``actor`` in ``f``."""
    return {i for i in ids if (c := f.get(i)) is not None
            and (p := parse_kind(c.kind)) is not None and p[1] == actor}


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

"""The narrow storage interface the memory service talks to.

A backend keeps memory chunks and their events and answers four questions: append these
chunks and events as one commit; which events are there; which memory chunks may this actor
read; which of them match a query. The file layers (``files.FileMemoryStore``) are the
first implementation; the PostgreSQL team server implements the same Protocol, and the
memory tests take the store as a fixture so they run against both.

Where things go is a :class:`Place`, not a path: ``user`` is the actor's own store,
``project`` this project's local layer, ``global`` the project's human-governed user
layer, ``proposal`` the project's delta layer (an agent's global save awaiting review),
``user_usage`` where the use counts of the actor's own memories go (beside, not in, the
file that holds them, so counting a use never changes the file a recall searches).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from sediment.format import Chunk
from sediment.memory.events import USE, StoredEvent
from sediment.memory.model import MemoryRef, Scope, parse_kind
from sediment.search import SearchRequest
from sediment.search.backend import search_store
from sediment.store.backend import LayerStore
from sediment.store.commit import New, NewChunk, NewEvent
from sediment.store.layers import LayerName
from sediment.store.rules import SHARED_MEMORY_LAYERS

__all__ = ["New", "NewEvent"]  # they live with the store's commits


class Place(StrEnum):
    USER = "user"
    PROJECT = "project"
    GLOBAL = "global"
    PROPOSAL = "proposal"
    USER_USAGE = "user_usage"


PLACE_OF_SCOPE = {Scope.USER: Place.USER, Scope.PROJECT: Place.PROJECT,
                  Scope.GLOBAL: Place.GLOBAL}


@dataclass(frozen=True, slots=True)
class NewMemory:
    kind: str
    content: str
    author: str
    confidence: float
    sources: tuple[int | str, ...]
    vector: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class StoredMemory:
    ref: MemoryRef
    place: Place
    chunk: Chunk


def layered_memory(actor: str, ref: MemoryRef,
                   found: tuple[LayerName, Chunk] | None) -> StoredMemory | None:
    """The memory ``ref`` from its winning version in the project's layers, if ``actor``
    may read it: a global one (user, base) is everyone's; a project note (local) or a
    proposal (delta) only its owner's. Both backends answer ``get`` through it."""
    if found is None:
        return None
    name, chunk = found
    parsed = parse_kind(chunk.kind)
    if parsed is None:
        return None
    if name in SHARED_MEMORY_LAYERS:
        place = Place.GLOBAL
    elif parsed[1] != actor:
        return None
    else:
        place = Place.PROJECT if name is LayerName.LOCAL else Place.PROPOSAL
    return StoredMemory(ref, place, chunk)


def shared_memories(actor: str, chunks: Iterable[tuple[LayerName, Chunk]]
                    ) -> list[StoredMemory]:
    """Of the chunks of the project's user, base and delta layers, the memories ``actor``
    reads: each global one once (user before base), then the actor's own proposals.
    Both backends list them through it."""
    by_layer: dict[LayerName, list[Chunk]] = {}
    for name, c in chunks:
        if (parsed := parse_kind(c.kind)) is not None \
                and (name in SHARED_MEMORY_LAYERS or parsed[1] == actor):
            by_layer.setdefault(name, []).append(c)
    out: list[StoredMemory] = []
    seen: set[int] = set()
    for name in (*SHARED_MEMORY_LAYERS, LayerName.DELTA):
        place = Place.PROPOSAL if name is LayerName.DELTA else Place.GLOBAL
        for c in by_layer.get(name, ()):
            if c.id not in seen:
                seen.add(c.id)
                out.append(StoredMemory(MemoryRef("p", c.id), place, c))
    return out


def readable_events(events: Iterable[StoredEvent], actor: str,
                    shared: Collection[int] = ()) -> list[StoredEvent]:
    """Of the events of a project layer that holds private memories (local, delta), those
    ``actor`` may read: their own and those no actor wrote; of another actor's use counts,
    only those of global memories (``shared``: everyone sees a global memory's uses)."""
    out: list[StoredEvent] = []
    for e in events:
        who = e.data.get("actor")
        if not isinstance(who, str) or who == actor:
            out.append(e)
        elif e.kind == USE and isinstance(uses := e.data.get("uses"), dict):
            mine = {k: v for k, v in uses.items()
                    if isinstance(k, str) and k.isdigit() and int(k) in shared}
            if mine:
                out.append(replace(e, data={**e.data, "uses": mine},
                                   sources=tuple(int(k) for k in mine)))
    return out


def append_to_layer(layers: LayerStore, layer: LayerName, memories: Sequence[NewMemory],
                    events: Sequence[NewEvent], dim: int, **options: Any) -> list[int]:
    """Write ``memories`` then ``events`` (their JSON, with the zero vector) as chunks of
    one layer in one commit, on either backend; return the memories' ids."""
    items = [NewChunk(m.kind, m.content, m.author, m.confidence, m.sources)
             for m in memories]
    items += [NewChunk(e.kind, "", e.author, 1.0, tuple(e.subjects), data=e.data)
              for e in events]
    if not items:
        return []
    zero = np.zeros(dim, dtype=np.float32)
    vectors = [np.asarray(m.vector, dtype=np.float32).reshape(-1) for m in memories]
    ids = layers.append(layer, items, np.stack(vectors + [zero] * len(events)),
                        allowed=(layer,), **options)
    return ids[:len(memories)]


def memory_kinds(kinds: Iterable[str], categories: Collection[str]) -> tuple[str, ...]:
    """Those of ``kinds`` that are memory kinds of ``categories``, sorted."""
    return tuple(sorted({n for n in kinds if (parsed := parse_kind(n)) is not None
                         and parsed[0] in categories}))


def search_layers(layers: LayerStore, store: str, names: tuple[LayerName, ...],
                  kinds: tuple[str, ...], text: str, vector: npt.NDArray[np.float32], k: int,
                  *, lexical: bool, normalised: bool) -> list[Candidate]:
    """The best ``k`` memories of ``kinds`` in the layers ``names``, ranked by the
    project's own search, as general search ranks chunks."""
    if not kinds:
        return []
    request = SearchRequest(text=text if lexical else None, k=k, kinds=kinds, layers=names,
                            mode="hybrid" if lexical else "vector")
    result = search_store(layers, request, np.asarray(vector, dtype=np.float32),
                          normalised=normalised)
    # an i8 row is a unit vector to within rounding: its dot product with the query can
    # pass 1.0 by a hair, which a cosine cannot
    return [Candidate(MemoryRef(store, h.id), min(float(h.vector_score or 0.0), 1.0),
                      float(h.lexical_score or 0.0), float(h.score)) for h in result.hits]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A search match: both raw scores (cosine; BM25, 0 when no term matches) and the
    store's own fused score."""

    ref: MemoryRef
    vector_score: float
    lexical_score: float
    score: float = 0.0


class MemoryStore(Protocol):
    def append(self, place: Place, actor: str, memories: Sequence[NewMemory],
               events: Sequence[NewEvent]) -> list[MemoryRef]:
        """Write ``memories`` then ``events`` at ``place`` as one commit; return the
        memories' refs."""
        ...

    def transaction(self, place: Place, actor: str) -> AbstractContextManager[object]:
        """Hold the write lock of ``place`` across a read-check-append sequence."""
        ...

    def events(self, actor: str) -> list[StoredEvent]:
        """Every memory event of every store ``actor`` reads."""
        ...

    def memories(self, actor: str, scopes: Sequence[Scope]) -> list[StoredMemory]:
        """Every memory chunk of ``scopes`` that ``actor`` may read, active or not:
        their own user and project memories, everyone's global ones, and their own
        pending proposals."""
        ...

    def get(self, actor: str, ref: MemoryRef) -> StoredMemory | None:
        """The memory ``ref`` if ``actor`` may read it (else None, as if absent)."""
        ...

    def search(self, actor: str, scope: Scope, text: str, vector: npt.NDArray[np.float32],
               categories: Sequence[str], k: int, *, lexical: bool = True
               ) -> list[Candidate]:
        """The best ``k`` of ``actor``'s readable, not hidden memories in ``scope``."""
        ...

    def version(self) -> Hashable:
        """Changes whenever anything the folds read changes (for caching)."""
        ...

    def purge(self, actor: str, refs: Sequence[MemoryRef]) -> int:
        """Remove these memory chunks' content from disk; return how many went."""
        ...

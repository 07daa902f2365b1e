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

from collections.abc import Hashable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

import numpy as np
import numpy.typing as npt

from sediment.format import Chunk
from sediment.memory.events import StoredEvent
from sediment.memory.model import MemoryRef, Scope, parse_kind
from sediment.store.commit import New, NewEvent, resolve_new
from sediment.store.layers import LayerName
from sediment.store.rules import SHARED_MEMORY_LAYERS

__all__ = ["New", "NewEvent", "resolve_new"]  # they live with the store's commits


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
    layer: str = ""
    hidden: tuple[tuple[str, Chunk], ...] = field(default=())


def layered_memory(actor: str, ref: MemoryRef,
                   versions: Sequence[tuple[LayerName, Chunk]]) -> StoredMemory | None:
    """The memory ``ref`` from its versions in the project's layers (newest first), if
    ``actor`` may read it: a global one (user, base) is everyone's; a project note (local)
    or a proposal (delta) only its owner's. Both backends answer ``get`` through it."""
    if not versions:
        return None
    name, chunk = versions[0]
    parsed = parse_kind(chunk.kind)
    if parsed is None:
        return None
    if name in SHARED_MEMORY_LAYERS:
        place = Place.GLOBAL
    elif parsed[1] != actor:
        return None
    else:
        place = Place.PROJECT if name is LayerName.LOCAL else Place.PROPOSAL
    return StoredMemory(ref, place, chunk, name.value,
                        tuple((n.value, v) for n, v in versions[1:]))


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

    def transaction(self, place: Place, actor: str) -> AbstractContextManager[None]:
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

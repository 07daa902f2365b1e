"""The narrow storage interface the context service talks to (like memory's).

A backend keeps context items (chunks of kind ``context.<type>`` with one vector each) and
their events, and answers: append these items and events as one commit; which items are
active and which archived; which events are there; move these items to an archive; drop
these items; how big is it. ``files.FileContextStore`` is the layer-file implementation;
a PostgreSQL backend implements the same Protocol.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from sediment.format import Chunk
from sediment.store.commit import New, NewEvent

__all__ = ["New", "NewEvent"]  # they live with the store's commits

ITEM_PREFIX = "context."


@dataclass(frozen=True, slots=True)
class NewItem:
    kind: str
    content: str
    author: str
    vector: npt.NDArray[np.float32]
    sources: tuple[int | str, ...] = ()


@dataclass(frozen=True, slots=True)
class StoredItem:
    chunk: Chunk
    vector: npt.NDArray[np.float32]
    archived: bool = False
    archive: str = ""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    id: int
    kind: str
    created_at_ms: int
    data: dict[str, Any]
    sources: tuple[int | str, ...] = ()


class ContextStore(Protocol):
    def append(self, items: Sequence[NewItem], events: Sequence[NewEvent]) -> list[int]:
        """Write ``items`` then ``events`` as one commit; return the items' ids."""
        ...

    def items(self, *, archived: bool = False) -> list[StoredItem]:
        """Every active item (and with ``archived``, every archived one too, before them:
        so that an append to the active store extends the list at its end)."""
        ...

    def events(self) -> list[StoredEvent]:
        """Every context event, in commit order."""
        ...

    def archive(self, ids: Sequence[int], day: str) -> int:
        """Move these items and their own events to the archive of ``day`` (YYYY-MM-DD)
        and rewrite the active store without them; return how many items moved."""
        ...

    def drop(self, ids: Sequence[int]) -> int:
        """Rewrite the store (active and archived) without these items (their events
        stay); return how many were removed."""
        ...

    def size_bytes(self) -> int:
        ...

    def version(self) -> Hashable:
        """Changes whenever anything stored changes (for caching folds)."""
        ...

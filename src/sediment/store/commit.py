"""What one commit appends, and how every backend turns it into chunks.

A commit often needs ids it has not been given yet: a memory and the event that records its
supersession, a note and the event that records who wrote it. Callers never allocate ids;
they name the i-th chunk of the same commit with :class:`New` (in ``sources`` or in an
event's ``data``), and the backend's append resolves the placeholders once it has taken
fresh ids (:func:`materialise`), so the rule "written ids come from one allocator" lives in
the backends alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sediment.format import Chunk, Source
from sediment.format.model import check_chunk
from sediment.store.events import event_content
from sediment.store.ids import check_chosen_id


@dataclass(frozen=True, slots=True)
class New:
    """The id of the ``index``-th chunk of the same commit (not known until it is made)."""

    index: int


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event a repository (memories, progressive context) appends beside its chunks;
    ``data`` values and ``subjects`` may hold :class:`New` placeholders."""

    kind: str
    data: dict[str, Any]
    subjects: tuple[int | New, ...] = ()
    author: str = "mcp"


@dataclass(frozen=True, slots=True)
class NewChunk:
    """A chunk to append; ``id`` None means "allocate", ``created_at_ms`` None means "now".

    ``sources`` may hold :class:`New` placeholders. An event gives ``data`` instead of
    ``content``: its content is the deterministic JSON of ``data`` once the placeholders in
    it are resolved."""

    kind: str
    content: str
    author: str
    confidence: float
    sources: tuple[Source | New, ...] = ()
    created_at_ms: int | None = None
    id: int | None = None
    data: Mapping[str, Any] | None = None


def resolve_new(value: Any, ids: Sequence[int]) -> Any:
    """``value`` with every :class:`New` (nested in lists, tuples and dicts) replaced by
    the id the commit gave that chunk."""
    if isinstance(value, New):
        if not 0 <= value.index < len(ids):
            raise IndexError(f"placeholder New({value.index}) names no chunk of a commit "
                             f"of {len(ids)}")
        return ids[value.index]
    if isinstance(value, list | tuple):
        return [resolve_new(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: resolve_new(v, ids) for k, v in value.items()}
    return value


def materialise(items: Sequence[NewChunk], layer: str, fresh: Iterator[int],
                taken: set[int], now_ms: int) -> list[Chunk]:
    """The chunks of one commit: ids from ``fresh`` for items without one (ids an item
    chose are checked against ``taken``, the target layer's ids), placeholders resolved,
    each checked against the format's rules (a database holds nothing a pull could not
    write into a layer file)."""
    ids: list[int] = []
    for item in items:
        if item.id is None:
            cid = next(fresh)
        else:
            cid = item.id
            check_chosen_id(cid, taken, layer)
        taken.add(cid)
        ids.append(cid)
    out: list[Chunk] = []
    for cid, item in zip(ids, items, strict=True):
        sources = tuple(resolve_new(list(item.sources), ids)) if item.sources else ()
        content = (event_content(**resolve_new(dict(item.data), ids))
                   if item.data is not None else item.content)
        chunk = Chunk(cid, item.kind, content, item.author, item.confidence,
                      now_ms if item.created_at_ms is None else item.created_at_ms, sources)
        check_chunk(chunk)
        out.append(chunk)
    return out

"""Which values inside an event are chunk ids, in one place.

Events name the chunks they are about in their JSON (``memory_id``, ``old_id``/``new_id``,
``context_id``, a context item's ``item``, ``summary_of``, ``related_to``, the keys of a use
count ``uses``, ...) and in their sources. Whatever gives chunks new ids (the git merge
driver renumbering one branch, a push moving memories or context to a server's id sequence)
rewrites every reference through :func:`rewrite_ids` and :func:`rewrite_sources`, so a key
added to an event is renumbered on every path or on none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from sediment.format import Chunk
from sediment.store.events import event_content, event_data, is_meta_kind
from sediment.store.ids import WrittenRange

Lookup = Callable[[int], int]
"""Old id -> new id (the identity for ids that keep theirs)."""

_ID_KEY = re.compile(r"(?:^|_)id$")
_IDS_KEY = re.compile(r"(?:^|_)ids$")
_INT_KEYS = frozenset({"restores", "item", "iteration_item"})
_LIST_KEYS = frozenset({"related_to", "summary_of"})
_KEYED_BY_ID = frozenset({"uses"})
_NOT_IDS = frozenset({"run_id", "session_id"})
"""Keys that end in ``_id`` but hold a name the agent chose, never a chunk id."""


def _map_id(value: Any, ids: Lookup) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return ids(value)
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 10:
        return str(ids(int(value)))
    return value


def rewrite_ids(value: Any, ids: Lookup) -> Any:
    """``value`` (an event's data, nested) with every chunk id it records replaced through
    ``ids``: values of keys named ``*_id``, ``restores``, ``item``, ``iteration_item``;
    items of ``*_ids``, ``related_to`` and ``summary_of`` lists; the keys of ``uses``."""
    if isinstance(value, list):
        return [rewrite_ids(v, ids) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[Any, Any] = {}
    for key, v in value.items():
        if key in _NOT_IDS:
            pass
        elif _ID_KEY.search(key) or key in _INT_KEYS:
            v = _map_id(v, ids) if isinstance(v, int | str) else rewrite_ids(v, ids)
        elif (_IDS_KEY.search(key) or key in _LIST_KEYS) and isinstance(v, list):
            v = [_map_id(x, ids) for x in v]
        elif key in _KEYED_BY_ID and isinstance(v, dict):
            v = {_map_id(k, ids): rewrite_ids(x, ids) for k, x in v.items()}
        else:
            v = rewrite_ids(v, ids)
        out[key] = v
    return out


def rewrite_sources(sources: Sequence[int | str], ids: Lookup) -> tuple[int | str, ...]:
    """A chunk's sources with its integer ones (chunk ids) replaced through ``ids``."""
    return tuple(ids(s) if isinstance(s, int) and not isinstance(s, bool) else s
                 for s in sources)


def rewrite_chunk(c: Chunk, ids: Mapping[int, int],
                  fields: Mapping[str, Any] | None = None) -> Chunk:
    """``c`` with its id and every id it references renumbered through ``ids`` (an id not
    in it keeps its own): integer sources, and the ids in a ``meta.*`` event's JSON, with
    ``fields`` set in it too; the JSON is written again (as every event is) only when it
    changed."""

    def moved(cid: int) -> int:
        return ids.get(cid, cid)

    content = c.content
    data = event_data(c) if is_meta_kind(c.kind) else None
    if data is not None:
        after = {**rewrite_ids(data, moved), **(fields or {})}
        if after != data:
            content = event_content(**after)
    return replace(c, id=moved(c.id), content=content,
                   sources=rewrite_sources(c.sources, moved))


def renumbered(chunks: Sequence[Chunk], fresh: Sequence[int]) -> list[Chunk]:
    """``chunks`` given the ids ``fresh`` (one each, ascending) in id order, so their commit
    order stays, with every reference among them rewritten (:func:`rewrite_chunk`).
    References to chunks not in ``chunks`` keep their ids. How a push moves an actor's rows
    onto a server's sequence (``pg.transfer.Owned``), and a pull back into a file store's
    range."""
    new = dict(zip(sorted(c.id for c in chunks), fresh, strict=True))
    return [rewrite_chunk(c, new) for c in chunks]

def renumbered_into(groups: Sequence[Sequence[Chunk]], ids: WrittenRange, high_water: int
                    ) -> tuple[list[list[Chunk]], range]:
    """Every chunk of ``groups`` (a store's files, each in its order) given a fresh id of
    ``ids`` above ``high_water``, :func:`renumbered` across all of them so references
    between groups follow; returns the groups and the ids given (whose last is the files'
    new ``id_high_water``). How a pull moves a server's rows into a file store's range."""
    every = [c for g in groups for c in g]
    fresh = ids.next_ids(high_water, len(every))
    moved = iter(renumbered(every, fresh))
    return [[next(moved) for _ in g] for g in groups], fresh

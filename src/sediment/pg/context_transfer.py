"""Progressive context between a directory's context store and one actor's rows on a server
(``sediment push --context`` / ``sediment pull --context``).

On files a project's context store is one working store (``<layer dir>/.sediment/context``:
the active file and dated archives); on a server every row belongs to an actor, and each
caller sees only their own. So a push moves the directory's store into one actor's rows,
and a pull writes one actor's rows back as a directory's store.

Ids: a file store numbers its items and events from its own range, and the server's one
id sequence numbers every row of a project, so a push gives every row a new id from the
sequence, every reference following (:mod:`sediment.store.refs`: an event's subjects, its
``item``, ``summary_of``, ``context_id``, the keys of ``uses``, ``iteration_item``, ...),
and an event's ``actor`` becomes the actor pushed as. A pull gives them back ids of the
range a context store numbers from (``FileContextStore.replace``): the server's ids are in
the project's range, where the pulled project's writers would give them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from sediment.context.files import ContextPart, is_context_event
from sediment.context.state import ITEM_EVENT, USE_EVENT
from sediment.context.store import ITEM_PREFIX
from sediment.errors import SchemaMismatchError
from sediment.format import Chunk
from sediment.pg.database import Database, bump
from sediment.pg.transfer import Owned, insert
from sediment.store.events import event_content, event_data

Row = tuple[str | None, Chunk, Any]
"""A context row of a file store: its archive day (None: active), the chunk, its vector."""
CONTEXT = Owned("context_rows", "project = %(project)s AND actor = %(actor)s", "archive",
                "context rows in project {project}; pushing this store again would "
                "duplicate them (pull them with `sediment pull --context`, or prune them "
                "there first)", confidence="1.0")
"""An actor's context rows."""
_COLUMNS = ("project, id, actor, is_event, kind, content, author, created_at_ms, sources, "
            "subjects, data, embedding, archive")


def _ints(values: Sequence[Any]) -> set[int]:
    return {v for v in values if isinstance(v, int) and not isinstance(v, bool)}


def actors_rows(chunks: Sequence[Row], actor: str) -> list[Row]:
    """The rows of ``chunks`` that are ``actor``'s: the items whose store event names
    ``actor``, and the events about those items only (a use event keeps its counts of
    them). A file store holds the items of every actor who worked in the directory; a push
    that moved them all as one actor's would hand the others' private items to that actor.
    An item no store event claims is no one's, so it stays behind."""
    owners: dict[int, str] = {}
    for _, c, _ in chunks:
        data = event_data(c) if c.kind == ITEM_EVENT else None
        if data is not None and isinstance(data.get("item"), int):
            owners[data["item"]] = str(data.get("actor", ""))
    mine = {c.id for _, c, _ in chunks
            if c.kind.startswith(ITEM_PREFIX) and owners.get(c.id) == actor}
    out: list[Row] = []
    for day, c, vec in chunks:
        if c.kind.startswith(ITEM_PREFIX):
            if c.id in mine:
                out.append((day, c, vec))
            continue
        data = event_data(c)
        subjects = _ints(c.sources)
        if data is not None and c.kind == USE_EVENT and isinstance(data.get("uses"), dict):
            uses = {k: v for k, v in data["uses"].items() if k.isdigit() and int(k) in mine}
            if uses:
                kept = tuple(s for s in c.sources if not isinstance(s, int) or s in mine)
                out.append((day, replace(c, content=event_content(**{**data, "uses": uses}),
                                         sources=kept), vec))
            continue
        if (subjects and subjects <= mine) or (
                not subjects and data is not None and data.get("actor") == actor):
            out.append((day, c, vec))
    return out


def push_context(db: Database, actor: str, parts: Sequence[ContextPart], dim: int) -> int:
    """Write ``parts`` (a file store's, from ``FileContextStore.parts``) as ``actor``'s
    context rows in ``db``'s project, in one transaction; return how many rows. Refused
    when the actor already has context there (a second push would duplicate it) or when
    the vectors' width is not the server's (``dim``, 0 when it has none yet)."""
    chunks = actors_rows([(p.day, c, p.vectors[i]) for p in parts
                          for i, c in enumerate(p.chunks)
                          if c.kind.startswith(ITEM_PREFIX) or is_context_event(c.kind)], actor)
    if not chunks:
        return 0
    width = next((len(v) for _, c, v in chunks if c.kind.startswith(ITEM_PREFIX)), 0)
    if dim and width and width != dim:
        raise SchemaMismatchError(f"the context store has {width}-dim vectors, project "
                                  f"{db.project} has {dim}-dim: they cannot be searched "
                                  "together")
    chunks.sort(key=lambda x: x[1].id)
    with db.transaction(lock=f"context-push:{db.project}:{actor}") as conn:
        moved = CONTEXT.renumbered(conn, db.project, actor, [c for _, c, _ in chunks])
        out: list[tuple[Any, ...]] = []
        for (day, _, vec), c in zip(chunks, moved, strict=True):
            item = c.kind.startswith(ITEM_PREFIX)
            data = None if item else event_data(c)
            if not item and data is None:
                continue  # not an event the context fold reads, on files either
            if data is not None and isinstance(data.get("actor"), str):
                data["actor"] = actor
            out.append((db.project, c.id, actor, not item, c.kind,
                        c.content if data is None else event_content(**data), c.author,
                        c.created_at_ms, Jsonb(list(c.sources)),
                        [s for s in c.sources if isinstance(s, int)],
                        None if data is None else Jsonb(data),
                        np.asarray(vec, dtype=np.float32) if item else None, day))
        insert(conn, "context_rows", _COLUMNS, out)
        bump(conn, f"context:{db.project}")
    return len(out)


def pull_context(db: Database, actor: str, dim: int) -> list[ContextPart]:
    """``actor``'s context rows in ``db``'s project as a file store's parts: one per
    archive day (oldest first), then the active rows, each in id (commit) order."""
    with db.connection() as conn:
        got = CONTEXT.read(conn, db.project, actor)
    zero = np.zeros(dim, dtype=np.float32)
    parts: list[ContextPart] = []
    for day, pairs in got.items():
        for c, v in pairs:
            if v is not None and len(v) != dim:
                raise SchemaMismatchError(f"context row {c.id} has a {len(v)}-dim vector, "
                                          f"the embedder {dim}")
        parts.append(ContextPart(day, [c for c, _ in pairs],
                                 np.stack([zero if v is None else v for _, v in pairs])))
    return parts

"""Memories in ``push`` and ``pull``: the rows that leave the layers for ``memories``.

In layer files the memories of a project (project scope, global, proposals) and their
events sit in the project's layers beside other chunks. On a server, global memories and
proposals stay in the layers (:mod:`sediment.pg.memory`), so they travel as chunks; the
project-scope ones, bound to an actor, are rows of the ``memories`` table, which every
query binds to an actor. A push therefore takes the local layer's memories and events out
of what it uploads and writes them as memory rows with their ids, owners (the actor in a
memory's kind, or in an event's JSON), times, vectors and state (a superseded or forgotten
version is hidden); a use event that counts global memories is split as the server's own
writes split it, so every actor sees a global memory's uses. A pull writes them back into
the local layer.

An actor's own memories (``u`` ids, ``<data dir>/actors/<actor>/``) are theirs, not the
project's: they go to a server only when asked (``push --user-memories``), and only that
actor's rows, owned by them. Every actor's file numbers its ids from the same start, so the
server gives them new ids from its sequence (the events' references follow), and an actor
who has own memories on the server already is refused (a second push would duplicate them).
``pull --user-memories`` writes the actor's rows back as their files, renumbered into the
actor range the files number from (``store.ids.ACTOR_IDS``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg.types.json import Jsonb

from sediment.format import Chunk
from sediment.memory.events import USE
from sediment.memory.model import parse_kind
from sediment.pg.database import Conn, next_ids
from sediment.pg.memory import split_uses
from sediment.pg.staging import Staging
from sediment.pg.store import PgStore
from sediment.pg.transfer_rows import (
    MEMORIES,
    Owned,
    Pair,
    insert,
    new_ids,
    new_metadata,
    read,
    refuse_existing,
    stage,
)
from sediment.store import LayerName, LayerSet
from sediment.store.events import (
    FORGET,
    MEMORY_KIND_PREFIX,
    SUPERSEDE,
    about_memories,
    event_content,
    parse_event,
)
from sediment.store.refs import renumbered_into

_COLUMNS = ("project, store, id, layer, owner, shared, is_event, kind, content, author, "
            "confidence, created_at_ms, sources, data, embedding, hidden")
ACTORS = Owned(MEMORIES, "project = '' AND store = 'u' AND owner = %(actor)s", "layer",
               rows="own memory rows on the server", again="their files",
               hint="pull them with `sediment pull --user-memories`, or forget them there "
                    "first")
"""An actor's own memory rows."""
USER_LAYERS = {LayerName.USER: "user", LayerName.LOCAL: "usage"}
"""An actor's own files (``FileMemoryStore.actor_set``) and the rows' layer on a server."""


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """One chunk of a memory store on its way to ``memories``."""

    layer: str
    chunk: Chunk
    vector: npt.NDArray[np.float32] | None
    data: dict[str, Any] | None


def memory_ids(files: LayerSet, names: Sequence[LayerName] | None = None) -> set[int]:
    """The ids of every memory (``memory.*`` chunk) in ``files`` (in its layers
    ``names``)."""
    out: set[int] = set()
    for layer in files.layers(names):
        out.update(c.id for c in layer.file.chunks() if c.kind.startswith(MEMORY_KIND_PREFIX))
    return out


def is_memory_row(chunk: Chunk, memories: set[int]) -> bool:
    """A memory or an event about memories (what the ``memories`` table holds)."""
    return chunk.kind.startswith(MEMORY_KIND_PREFIX) or about_memories(chunk, memories)


def memory_row(layer: str, chunk: Chunk, vector: npt.NDArray[np.float32] | None) -> MemoryRow:
    if chunk.kind.startswith(MEMORY_KIND_PREFIX):
        return MemoryRow(layer, chunk, None if vector is None else
                         np.asarray(vector, dtype=np.float32), None)
    return MemoryRow(layer, chunk, None, parse_event(chunk))


def _owner(row: MemoryRow) -> str:
    if row.data is None:
        parsed = parse_kind(row.chunk.kind)
        return parsed[1] if parsed else ""
    actor = row.data.get("actor")
    return actor if isinstance(actor, str) else ""


def _hidden(rows: Iterable[MemoryRow]) -> set[int]:
    """Memory ids a supersede or forget event hides (as the server's writes mark them)."""
    out: set[int] = set()
    for r in rows:
        if r.data is None:
            continue
        key = "old_id" if r.chunk.kind == SUPERSEDE else \
            "context_id" if r.chunk.kind == FORGET else None
        got = r.data.get(key) if key else None
        if isinstance(got, int) and not isinstance(got, bool):
            out.add(got)
    return out


def _values(project: str, prefix: str, row: MemoryRow, owner: str, shared: bool,
            hidden: set[int]) -> tuple[Any, ...]:
    c = row.chunk
    return (project, prefix, c.id, row.layer, owner, shared, row.data is not None, c.kind,
            c.content, c.author, float(c.confidence), c.created_at_ms,
            Jsonb(list(c.sources)), Jsonb(row.data) if row.data is not None else None,
            row.vector, row.data is None and c.id in hidden)


def push_project(conn: Conn, project: str, rows: list[MemoryRow], glob: set[int]) -> int:
    """Write a project's memory rows (ids kept; ``glob``: the ids of its global memories,
    which stay in its layers): identical rows already there are skipped, an id another
    row of the project uses (in any table) is refused. Returns how many were written."""
    keep = new_ids(conn, project, MEMORIES, [r.chunk for r in rows])
    new = [r for r in rows if r.chunk.id in keep]
    hidden, shared = _hidden(rows), {str(g) for g in glob}
    out: list[tuple[Any, ...]] = []
    splits: list[MemoryRow] = []
    for r in new:
        uses = r.data.get("uses") if r.data is not None else None
        if r.chunk.kind == USE and isinstance(uses, dict) and any(k in shared for k in uses):
            splits.append(r)
        else:
            out.append(_values(project, "p", r, _owner(r), False, hidden))
    fresh = iter(next_ids(conn, len(splits)))
    for r in splits:
        # a use event counting global memories becomes the actor's part (its id) and a
        # shared part (a fresh id) for the global ones, as ``PgMemoryStore.append`` does
        assert r.data is not None
        cids = iter((r.chunk.id, next(fresh)))
        for data, part_shared in split_uses(r.data, shared):
            c = r.chunk
            chunk = Chunk(next(cids), c.kind, event_content(**data), c.author, c.confidence,
                          c.created_at_ms,
                          tuple(sorted(int(k) for k in data["uses"] if k.isdigit())))
            out.append(_values(project, "p", MemoryRow(r.layer, chunk, None, data),
                               _owner(r), part_shared, set()))
    insert(conn, MEMORIES, _COLUMNS, out)
    return len(new)


def push_actor(conn: Conn, actor: str, files: LayerSet) -> int:
    """Write the rows of ``actor``'s own memory files that are theirs (a memory of their
    kinds, an event they made) as their rows, with new ids (module docstring)."""
    rows: list[MemoryRow] = []
    for layer in files.layers(USER_LAYERS):
        for i, c in enumerate(layer.file.chunks()):
            row = memory_row(USER_LAYERS[layer.name], c, layer.file.vector(i))
            if _owner(row) == actor:
                rows.append(row)
    if not rows:
        return 0
    moved = [memory_row(r.layer, c, r.vector) for r, c in zip(
        rows, ACTORS.renumbered(conn, "", actor, [r.chunk for r in rows]), strict=True)]
    hidden = _hidden(moved)
    insert(conn, MEMORIES, _COLUMNS, [_values("", "u", r, actor, False, hidden)
                                      for r in moved])
    return len(moved)


# -- pull ----------------------------------------------------------------------------
def project_rows(conn: Conn, project: str) -> dict[str | None, list[Pair]]:
    """The project's memory rows, by layer, in id order."""
    return read(conn, MEMORIES, "project = %(project)s AND store = 'p'",
                {"project": project}, "layer")


def pull_actor(store: PgStore, actor: str, files: LayerSet, *, force: bool,
               staging: Staging) -> int:
    """Stage ``actor``'s own memories as their files (``files``: the actor's set); refuses
    to overwrite unless ``force``. The rows get fresh ids of the actor range
    (``files.ids``), above any the files used, their references following: the server
    numbered them from its one sequence, in the project's range, so kept they could be ids
    the pulled project's writers give next."""
    with store.db.connection() as conn:
        got = ACTORS.read(conn, store.project, actor)
    if not got:
        return 0
    targets = {n: files.paths[n] for n, la in USER_LAYERS.items()
               if la in got and n in files.paths}
    refuse_existing(targets.values(), force, f"actor {actor}'s memories")
    groups, fresh = renumbered_into([[c for c, _ in got.get(la, ())]
                                     for la in USER_LAYERS.values()],
                                    files.ids, files.written_high_water())
    schema = store.schema()
    metadata = {**new_metadata(schema.profile if schema is not None else None),
                "id_high_water": fresh.stop - 1}
    n = 0
    for (name, la), group in zip(USER_LAYERS.items(), groups, strict=True):
        if name in targets:
            n += stage(staging, targets[name], list(zip(group, (v for _, v in got[la]),
                                                        strict=True)),
                       dim=schema.dim if schema is not None else 0, metadata=metadata)
    return n

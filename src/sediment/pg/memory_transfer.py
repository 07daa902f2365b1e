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
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg.types.json import Jsonb

from sediment.errors import PermissionDeniedError
from sediment.format import Chunk, encode_layer
from sediment.memory.events import USE
from sediment.memory.model import parse_kind
from sediment.pg.database import next_ids
from sediment.pg.memory import split_uses
from sediment.pg.staging import Staging
from sediment.pg.store import PgStore, as_vector
from sediment.store import LayerName, LayerSet
from sediment.store.events import (
    FORGET,
    MEMORY_KIND_PREFIX,
    SUPERSEDE,
    about_memories,
    event_content,
    parse_event,
)
from sediment.store.ids import ACTOR_IDS
from sediment.store.refs import renumbered_into, rewrite_chunk

MAX_LISTED = 10
_INSERT = ("INSERT INTO memories (project, store, id, layer, owner, shared, is_event, kind, "
           "content, author, confidence, created_at_ms, sources, data, embedding, hidden) "
           "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)")
USER_LAYERS = {LayerName.USER: "user", LayerName.LOCAL: "usage"}
"""An actor's own files (``FileMemoryStore.actor_set``) and the rows' layer on a server."""


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """One chunk of a memory store on its way to ``memories``."""

    layer: str
    chunk: Chunk
    vector: npt.NDArray[np.float32] | None
    data: dict[str, Any] | None

    @property
    def is_event(self) -> bool:
        return self.data is not None


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


def listed_ids(ids: Sequence[int]) -> str:
    """Ids for a message: the first ``MAX_LISTED``, then how many more."""
    more = f" and {len(ids) - MAX_LISTED} more" if len(ids) > MAX_LISTED else ""
    return ", ".join(map(str, ids[:MAX_LISTED])) + more


def _fresh_ids(store: PgStore, n: int) -> list[int]:
    with store.cursor() as cur:
        return next_ids(cur.connection, n)


def _values(project: str, prefix: str, row: MemoryRow, owner: str, shared: bool,
            hidden: bool) -> tuple[Any, ...]:
    c = row.chunk
    return (project, prefix, c.id, row.layer, owner, shared, row.is_event, c.kind, c.content,
            c.author, float(c.confidence), c.created_at_ms, Jsonb(list(c.sources)),
            Jsonb(row.data) if row.data is not None else None,
            row.vector if row.vector is not None else None, hidden)


def private_ids(store: PgStore, ids: Sequence[int]) -> set[int]:
    """Those of ``ids`` the project's actor-bound tables (``memories``, ``context_rows``)
    use: one id names one row of a project, whichever table holds it."""
    if not ids:
        return set()
    with store.cursor() as cur:
        cur.execute("SELECT id FROM memories WHERE project = %s AND store = 'p' AND "
                    "id = ANY(%s) UNION SELECT id FROM context_rows WHERE project = %s AND "
                    "id = ANY(%s)", (store.project, list(ids), store.project, list(ids)))
        return {int(r[0]) for r in cur.fetchall()}


def push_project(store: PgStore, rows: list[MemoryRow], glob: set[int]) -> int:
    """Write a project's memory rows (ids kept; ``glob``: the ids of its global memories,
    which stay in its layers): identical rows already there are skipped, an id another
    row of the project uses (in any table) is refused. Returns how many were written."""
    if not rows:
        return 0
    ids = [r.chunk.id for r in rows]
    with store.cursor() as cur:
        cur.execute("SELECT id, kind, content FROM memories WHERE project = %s AND store = 'p' "
                    "AND id = ANY(%s)", (store.project, ids))
        there = {int(r[0]): (r[1], r[2]) for r in cur.fetchall()}
        cur.execute("SELECT DISTINCT id FROM chunks WHERE project = %s AND id = ANY(%s) "
                    "UNION SELECT id FROM context_rows WHERE project = %s AND id = ANY(%s)",
                    (store.project, ids, store.project, ids))
        elsewhere = sorted(int(r[0]) for r in cur.fetchall())
    clash = sorted({r.chunk.id for r in rows if r.chunk.id in there
                    and there[r.chunk.id] != (r.chunk.kind, r.chunk.content)}
                   | set(elsewhere))
    if clash:
        raise PermissionDeniedError(
            f"project {store.project} already holds other chunks under the memory ids "
            f"{listed_ids(clash)}; a push into a project may only add new ids")
    new = [r for r in rows if r.chunk.id not in there]
    hidden = _hidden(rows)
    out: list[tuple[Any, ...]] = []
    splits: list[tuple[MemoryRow, str]] = []
    for r in new:
        uses = r.data.get("uses") if r.data is not None else None
        if r.chunk.kind == USE and isinstance(uses, dict) \
                and any(k in {str(g) for g in glob} for k in uses):
            splits.append((r, _owner(r)))
            continue
        out.append(_values(store.project, "p", r, _owner(r), False,
                           r.data is None and r.chunk.id in hidden))
    out.extend(_split_uses(store, splits, {str(g) for g in glob}))
    with store.cursor() as cur:
        cur.executemany(_INSERT, out)
    return len(new)


def _split_uses(store: PgStore, splits: list[tuple[MemoryRow, str]], glob: set[str]
                ) -> list[tuple[Any, ...]]:
    """A use event counting global memories becomes the actor's part (its id) and a shared
    part (a fresh id) for the global ones, as ``PgMemoryStore.append`` writes it."""
    out: list[tuple[Any, ...]] = []
    fresh = iter(_fresh_ids(store, len(splits)))
    for r, owner in splits:
        assert r.data is not None
        cids = iter((r.chunk.id, next(fresh)))
        for data, shared in split_uses(r.data, glob):
            c = r.chunk
            chunk = Chunk(next(cids), c.kind, event_content(**data), c.author, c.confidence,
                          c.created_at_ms,
                          tuple(sorted(int(k) for k in data["uses"] if k.isdigit())))
            out.append(_values(store.project, "p", MemoryRow(r.layer, chunk, None, data),
                               owner, shared, False))
    return out


def actor_rows(actor: str, files: LayerSet) -> list[MemoryRow]:
    """The rows of ``actor``'s own memory files that are theirs (a memory of their kinds,
    an event they made)."""
    out: list[MemoryRow] = []
    for layer in files.layers():
        name = USER_LAYERS.get(layer.name)
        if name is None:
            continue
        f = layer.file
        for i, c in enumerate(f.chunks()):
            row = memory_row(name, c, f.vector(i))
            if _owner(row) == actor:
                out.append(row)
    return out


def push_actor(store: PgStore, actor: str, rows: list[MemoryRow]) -> int:
    """Write ``actor``'s own memory rows with new ids (module docstring)."""
    if not rows:
        return 0
    with store.cursor() as cur:
        cur.execute("SELECT count(*) FROM memories WHERE project = '' AND store = 'u' "
                    "AND owner = %s", (actor,))
        got = cur.fetchone()
    if got is not None and int(got[0]):
        raise PermissionDeniedError(
            f"actor {actor} already has {int(got[0])} own memory rows on the server; pushing "
            "their files again would duplicate them (pull them with `sediment pull "
            "--user-memories`, or forget them there first)")
    rows = sorted(rows, key=lambda r: r.chunk.id)
    new = dict(zip((r.chunk.id for r in rows), _fresh_ids(store, len(rows)), strict=True))
    moved = [memory_row(r.layer, rewrite_chunk(r.chunk, new), r.vector) for r in rows]
    hidden = _hidden(moved)
    out = [_values("", "u", r, actor, False, r.data is None and r.chunk.id in hidden)
           for r in moved]
    with store.cursor() as cur:
        cur.executemany(_INSERT, out)
    return len(out)


# -- pull ----------------------------------------------------------------------------
def stored_rows(store: PgStore, *, actor: str | None = None
                ) -> dict[str, list[tuple[Chunk, npt.NDArray[np.float32] | None]]]:
    """The project's memory rows (or, with ``actor``, that actor's own), by layer, in id
    order."""
    where = ("project = '' AND store = 'u' AND owner = %s", (actor,)) if actor is not None \
        else ("project = %s AND store = 'p'", (store.project,))
    with store.cursor() as cur:
        cur.execute("SELECT layer, id, kind, content, author, confidence, created_at_ms, "
                    f"sources, embedding FROM memories WHERE {where[0]} ORDER BY id", where[1])
        got = cur.fetchall()
    out: dict[str, list[tuple[Chunk, npt.NDArray[np.float32] | None]]] = {}
    for r in got:
        chunk = Chunk(int(r[1]), str(r[2]), str(r[3]), str(r[4]), float(r[5]), int(r[6]),
                      tuple(r[7] or ()))
        vec = as_vector(r[8], 0) if r[8] is not None else None
        out.setdefault(str(r[0]), []).append((chunk, vec))
    return out


def merged(chunks: list[Chunk], vectors: npt.NDArray[np.float32],
           rows: list[tuple[Chunk, npt.NDArray[np.float32] | None]], dim: int
           ) -> tuple[list[Chunk], npt.NDArray[np.float32]]:
    """A layer's chunks with its memory rows among them, in id order (events get the zero
    vector, as the file store writes them)."""
    if not rows:
        return chunks, vectors
    zero = np.zeros(dim, dtype=np.float32)
    pairs = list(zip(chunks, list(vectors), strict=True))
    pairs += [(c, v if v is not None and v.shape[0] == dim else zero) for c, v in rows]
    pairs.sort(key=lambda p: p[0].id)
    return [c for c, _ in pairs], (np.stack([v for _, v in pairs]) if pairs
                                   else np.zeros((0, dim), dtype=np.float32))


def pull_actor(store: PgStore, actor: str, files: dict[LayerName, Path], *, dim: int,
               profile: dict[str, Any] | None, force: bool, staging: Staging) -> int:
    """Stage ``actor``'s own memories as their files (``files``: the actor's user and
    usage layer paths); refuses to overwrite unless ``force``. The rows get fresh ids of
    the actor range (``store.ids.ACTOR_IDS``), above any the files used, their references
    following: the server numbered them from its one sequence, in the project's range, so
    kept they could be ids the pulled project's writers give next."""
    got = stored_rows(store, actor=actor)
    if not got:
        return 0
    targets = {n: p for n, p in files.items() if USER_LAYERS[n] in got}
    existing = [str(p) for p in targets.values() if p.exists()]
    if existing and not force:
        raise PermissionDeniedError(f"{', '.join(existing)} already exist; pass --force to "
                                    f"overwrite them with actor {actor}'s memories")
    mine = LayerSet(files, ids=ACTOR_IDS)
    layers = list(USER_LAYERS.values())
    groups, fresh = renumbered_into([[c for c, _ in got.get(la, ())] for la in layers],
                                    ACTOR_IDS, mine.written_high_water())
    got = {la: list(zip(g, (v for _, v in got.get(la, ())), strict=True))
           for la, g in zip(layers, groups, strict=True)}
    n = 0
    for name, path in targets.items():
        rows = got[USER_LAYERS[name]]
        chunks, vectors = merged([], np.zeros((0, dim), dtype=np.float32), rows, dim)
        metadata: dict[str, Any] = {"v": 1, "tool_name": "sediment",
                                    "id_high_water": fresh.stop - 1}
        if profile is not None:
            metadata["embedding_profile"] = profile
        staging.write(path, encode_layer(chunks, vectors, dim=dim, metadata=metadata))
        n += len(chunks)
    return n

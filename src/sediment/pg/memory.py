"""The memory store on PostgreSQL (the second ``MemoryStore``; the first is the files').

Rows of ``memories`` (migration 0051) hold memory chunks and their events, as the layer
files do; where each place puts them mirrors ``sediment.memory.files``: an actor's own
memories ('u', project '') follow them across projects, project memories, global ones and
proposals belong to the store URL's project. Isolation is in the SQL: every read binds the
actor (its own rows, plus the ``shared`` global ones), every change binds it too, so no
route, whatever the service above it does, reads or changes another actor's private rows.

Search scores the same two signals as the file store and fuses them the same way: exact
cosine from pgvector, and Sediment's own BM25 over the candidates (the best by vector plus
every full-text match, bounded), fused by :class:`~sediment.search.fusion.ConvexFusion`.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg.types.json import Jsonb

from sediment.format import Chunk
from sediment.memory.events import USE, StoredEvent
from sediment.memory.model import CATEGORIES, MemoryRef, Scope, actor_kinds
from sediment.memory.store import (
    Candidate,
    NewEvent,
    NewMemory,
    Place,
    StoredMemory,
    resolve_new,
)
from sediment.pg.database import Conn, Database, bump, next_ids, revision, row, rows
from sediment.search.analysis import plain_tokens
from sediment.search.bm25 import BM25Index
from sediment.search.fusion import ConvexFusion, Pool
from sediment.store.events import FORGET, SUPERSEDE, event_content

SUBJECT = "memories"
CANDIDATES = 200
"""How many rows each side (vector, full text) offers a search at most."""
_WHERE = {Place.USER: ("u", "user"), Place.USER_USAGE: ("u", "usage"),
          Place.PROJECT: ("p", "local"), Place.GLOBAL: ("p", "user"),
          Place.PROPOSAL: ("p", "delta")}
_FILE_LAYER = {"usage": "local"}
_GLOBAL = ("user", "base")
_COLUMNS = "store, id, layer, kind, content, author, confidence, created_at_ms, sources"


def _chunk(row: Sequence[Any]) -> Chunk:
    return Chunk(int(row[1]), str(row[3]), str(row[4]), str(row[5]), float(row[6]),
                 int(row[7]), tuple(row[8] or ()))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class PgMemoryStore:
    """Memories of one project (``database.project``) and of every actor's own store."""

    def __init__(self, database: Database, *, dim: int) -> None:
        self.db = database
        self.project = database.project
        self.dim = dim

    def _project(self, store: str) -> str:
        return "" if store == "u" else self.project

    def _lock(self, store: str, actor: str) -> str:
        return f"memory:u:{actor}" if store == "u" else f"memory:p:{self.project}"

    # -- writing ---------------------------------------------------------------------
    def transaction(self, place: Place, actor: str) -> AbstractContextManager[None]:
        return self._held(self._lock(_WHERE[place][0], actor))

    @contextmanager
    def _held(self, lock: str) -> Iterator[None]:
        with self.db.transaction(lock):
            yield

    def append(self, place: Place, actor: str, memories: Sequence[NewMemory],
               events: Sequence[NewEvent]) -> list[MemoryRef]:
        store, layer = _WHERE[place]
        project = self._project(store)
        shared = place is Place.GLOBAL
        now = int(time.time() * 1000)
        with self.db.transaction(self._lock(store, actor)) as conn:
            ids = next_ids(conn, len(memories) + len(events))
            rows: list[tuple[Any, ...]] = []
            for cid, m in zip(ids, memories, strict=False):
                rows.append((project, store, cid, layer, actor, shared, False, m.kind,
                             m.content, m.author, float(m.confidence), now,
                             Jsonb(list(m.sources)), None,
                             np.asarray(m.vector, dtype=np.float32).reshape(-1)))
            hide: list[int] = []
            for cid, e in zip(ids[len(memories):], events, strict=True):
                data = resolve_new(e.data, ids)
                subjects = [int(s) for s in resolve_new(list(e.subjects), ids)]
                parts = self._split_use(conn, place, e.kind, data, shared)
                extra = next_ids(conn, len(parts) - 1)
                for (part, is_shared), rid in zip(parts, [cid, *extra], strict=True):
                    part_subjects = subjects if part is data else \
                        sorted(int(x) for x in part["uses"])
                    rows.append((project, store, rid, layer, actor, is_shared, True, e.kind,
                                 event_content(**part), e.author, 1.0, now,
                                 Jsonb(part_subjects), Jsonb(part), None))
                if e.kind == SUPERSEDE and (old := _int(data.get("old_id"))) is not None:
                    hide.append(old)
                elif e.kind == FORGET and (gone := _int(data.get("context_id"))) is not None:
                    hide.append(gone)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO memories (project, store, id, layer, owner, shared, is_event, "
                    "kind, content, author, confidence, created_at_ms, sources, data, "
                    "embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                    "%s, %s) ON CONFLICT (project, store, id) DO NOTHING", rows)
            if hide:
                conn.execute(
                    "UPDATE memories SET hidden = true WHERE project = %s AND store = %s "
                    "AND id = ANY(%s) AND NOT is_event AND (owner = %s OR shared)",
                    (project, store, hide, actor))
            bump(conn, SUBJECT)
        return [MemoryRef(store, i) for i in ids[:len(memories)]]

    def _split_use(self, conn: Conn, place: Place, kind: str, data: dict[str, Any],
                   shared: bool) -> list[tuple[dict[str, Any], bool]]:
        """A project use event counts global memories too: their counts go to a shared
        event (every actor sees a global memory's uses), the rest stay the actor's."""
        uses = data.get("uses")
        if kind != USE or place is not Place.PROJECT or not isinstance(uses, dict) or shared:
            return [(data, shared)]
        ids = [int(k) for k in uses if isinstance(k, str) and k.isdigit()]
        got = rows(
            conn, "SELECT id FROM memories WHERE project = %s AND store = 'p' AND id = ANY(%s) "
            "AND layer IN ('user', 'base') AND NOT is_event", (self.project, ids))
        glob = {str(int(r[0])) for r in got}
        if not glob:
            return [(data, False)]
        own = {k: v for k, v in uses.items() if k not in glob}
        out = [({**data, "uses": {k: v for k, v in uses.items() if k in glob}}, True)]
        if own:
            out.insert(0, ({**data, "uses": own}, False))
        return out

    # -- reading ---------------------------------------------------------------------
    def version(self) -> Hashable:
        with self.db.connection() as conn:
            return revision(conn, SUBJECT)

    def events(self, actor: str) -> list[StoredEvent]:
        with self.db.connection() as conn:
            got = rows(
                conn, "SELECT store, layer, id, kind, created_at_ms, data, sources FROM memories "
                "WHERE is_event AND ((project = '' AND store = 'u' AND owner = %s) OR "
                "(project = %s AND store = 'p' AND (owner = %s OR shared))) ORDER BY id",
                (actor, self.project, actor))
        return [StoredEvent(str(r[0]), _FILE_LAYER.get(str(r[1]), str(r[1])), int(r[2]),
                            str(r[3]), int(r[4]), dict(r[5] or {}), tuple(r[6] or ()))
                for r in got if isinstance(r[5], dict)]

    def memories(self, actor: str, scopes: Sequence[Scope]) -> list[StoredMemory]:
        own = list(actor_kinds(actor))
        out: list[StoredMemory] = []
        with self.db.connection() as conn:
            if Scope.USER in scopes:
                got = rows(
                    conn, f"SELECT {_COLUMNS} FROM memories WHERE project = '' AND store = 'u' "
                    "AND layer = 'user' AND owner = %s AND NOT is_event AND kind = ANY(%s) "
                    "ORDER BY id", (actor, own))
                out.extend(StoredMemory(MemoryRef("u", int(r[1])), Place.USER, _chunk(r),
                                        "user") for r in got)
            if Scope.PROJECT in scopes:
                got = rows(
                    conn, f"SELECT {_COLUMNS} FROM memories WHERE project = %s AND store = 'p' "
                    "AND layer = 'local' AND owner = %s AND NOT is_event AND kind = ANY(%s) "
                    "ORDER BY id", (self.project, actor, own))
                out.extend(StoredMemory(MemoryRef("p", int(r[1])), Place.PROJECT,
                                        _chunk(r), "local") for r in got)
            if Scope.GLOBAL in scopes:
                got = rows(
                    conn, f"SELECT {_COLUMNS} FROM memories WHERE project = %s AND store = 'p' "
                    "AND NOT is_event AND kind LIKE 'memory.%%' AND (layer IN ('user', 'base') "
                    "OR (layer = 'delta' AND owner = %s)) ORDER BY id",
                    (self.project, actor))
                for r in got:
                    place = Place.PROPOSAL if r[2] == "delta" else Place.GLOBAL
                    out.append(StoredMemory(MemoryRef("p", int(r[1])), place, _chunk(r),
                                            str(r[2])))
        return out

    def get(self, actor: str, ref: MemoryRef) -> StoredMemory | None:
        with self.db.connection() as conn:
            if ref.store == "u":
                found = row(
                    conn, f"SELECT {_COLUMNS} FROM memories WHERE project = '' AND store = 'u' "
                    "AND id = %s AND layer = 'user' AND owner = %s AND NOT is_event "
                    "AND kind = ANY(%s)", (ref.id, actor, list(actor_kinds(actor))))
                return StoredMemory(ref, Place.USER, _chunk(found), "user") if found else None
            found = row(
                conn, f"SELECT {_COLUMNS} FROM memories WHERE project = %s AND store = 'p' "
                "AND id = %s AND NOT is_event AND kind LIKE 'memory.%%' AND "
                "(layer IN ('user', 'base') OR (owner = %s AND kind = ANY(%s)))",
                (self.project, ref.id, actor, list(actor_kinds(actor))))
        if found is None:
            return None
        layer = str(found[2])
        place = Place.GLOBAL if layer in _GLOBAL else \
            Place.PROJECT if layer == "local" else Place.PROPOSAL
        return StoredMemory(ref, place, _chunk(found), layer)

    def search(self, actor: str, scope: Scope, text: str, vector: npt.NDArray[np.float32],
               categories: Sequence[str], k: int, *, lexical: bool = True
               ) -> list[Candidate]:
        cats = [c for c in CATEGORIES if c in categories]
        if not cats:
            return []
        if scope is Scope.USER:
            store, where = "u", ("project = '' AND store = 'u' AND layer = 'user' "
                                 "AND owner = %(actor)s AND kind = ANY(%(kinds)s)")
        elif scope is Scope.PROJECT:
            store, where = "p", ("project = %(project)s AND store = 'p' AND layer = 'local' "
                                 "AND owner = %(actor)s AND kind = ANY(%(kinds)s)")
        else:
            store, where = "p", ("project = %(project)s AND store = 'p' "
                                 "AND layer IN ('user', 'base') "
                                 "AND split_part(kind, '.', 2) = ANY(%(cats)s) "
                                 "AND kind LIKE 'memory.%%'")
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        params: dict[str, Any] = {"actor": actor, "project": self.project, "cats": cats,
                                  "kinds": list(actor_kinds(actor, tuple(cats))), "q": q,
                                  "n": max(k, CANDIDATES), "dim": int(q.shape[0])}
        base = (f"SELECT id, content, 1 - (embedding <=> %(q)s) FROM memories WHERE {where} "
                "AND NOT is_event AND NOT hidden AND vector_dims(embedding) = %(dim)s")
        words = sorted({w for w in plain_tokens(text) if w.isalnum()})[:64] if lexical else []
        with self.db.connection() as conn:
            found = {int(r[0]): (str(r[1]), float(r[2]))
                     for r in rows(conn, base + " ORDER BY embedding <=> %(q)s, id "
                                   "LIMIT %(n)s", params)}
            if words:
                params["tsq"] = " | ".join(words)
                for r in rows(conn, base + " AND to_tsvector('simple', content) @@ "
                              "to_tsquery('simple', %(tsq)s) LIMIT %(n)s", params):
                    found.setdefault(int(r[0]), (str(r[1]), float(r[2])))
        if not found:
            return []
        ids = list(found)
        cos = np.asarray([found[i][1] for i in ids], dtype=np.float32)
        if not lexical:
            order = sorted(range(len(ids)), key=lambda i: (-cos[i], ids[i]))[:k]
            return [Candidate(MemoryRef(store, ids[i]), float(cos[i]), 0.0, float(cos[i]))
                    for i in order]
        lex = BM25Index([found[i][0] for i in ids]).scores(text).astype(np.float32)
        zero = np.zeros(len(ids), dtype=np.int64)
        fused = ConvexFusion().combine(Pool(cos, lex, zero, zero))
        order = sorted(range(len(ids)), key=lambda i: (-round(float(fused[i]), 6),
                                                       -cos[i], ids[i]))[:k]
        return [Candidate(MemoryRef(store, ids[i]), float(cos[i]), float(lex[i]),
                          float(fused[i])) for i in order]

    # -- purge -----------------------------------------------------------------------
    def purge(self, actor: str, refs: Sequence[MemoryRef]) -> int:
        removed = 0
        for store in ("u", "p"):
            drop = sorted({r.id for r in refs if r.store == store})
            if not drop:
                continue
            with self.db.transaction(self._lock(store, actor)) as conn:
                cur = conn.execute(
                    "DELETE FROM memories WHERE project = %s AND store = %s AND id = ANY(%s) "
                    "AND owner = %s AND NOT is_event AND layer <> 'base'",
                    (self._project(store), store, drop, actor))
                removed += cur.rowcount
                bump(conn, SUBJECT)
        return removed


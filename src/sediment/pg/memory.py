"""The memory store on PostgreSQL (the second ``MemoryStore``; the first is the files').

Where each place puts its rows mirrors ``sediment.memory.files``. The rows bound to one
actor are rows of ``memories`` (migration 0051): an actor's own memories ('u', project '')
follow them across projects, project-scope memories ('local') belong to the URL's project;
isolation is in the SQL: every read binds the actor (its own rows, plus the ``shared`` use
counts of global memories), every change binds it too, so no route, whatever the service
above it does, reads or changes another actor's private rows. The project's global
memories and memory proposals are human-governed, not private: they sit in the project's
layers (``chunks``, through :class:`~sediment.pg.store.PgStore`), global ones in the user
layer (and base), proposals with their events in the delta layer, exactly where the layer
files keep them (migration 0070), so the review flow lists and decides a memory proposal
as any other and a global memory is searched as the files search it.

Search scores the same two signals as the file store and fuses them the same way: exact
cosine from pgvector, and Sediment's own BM25 over the candidates (the best by vector plus
every full-text match, bounded), fused by :class:`~sediment.search.fusion.ConvexFusion`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg.types.json import Jsonb

from sediment.format import Chunk
from sediment.format.profile import unit_vectors
from sediment.memory.events import MEMORY_EVENT_KINDS, USE, StoredEvent
from sediment.memory.model import MemoryRef, Scope, actor_kinds
from sediment.memory.relevance import fuse
from sediment.memory.store import (
    PLACE_OF_SCOPE,
    Candidate,
    NewEvent,
    NewMemory,
    Place,
    StoredMemory,
    append_to_layer,
    layered_memory,
    memory_kinds,
    readable_events,
    search_layers,
    shared_memories,
)
from sediment.pg.database import Conn, Database, bump, next_ids, revision, row, rows
from sediment.pg.store import PgStore
from sediment.search.analysis import plain_tokens
from sediment.search.bm25 import BM25Index
from sediment.store import LayerName
from sediment.store.commit import resolve_new
from sediment.store.events import META_PREFIX, event_content, event_data, hidden_by
from sediment.store.rules import SHARED_MEMORY_LAYERS

SUBJECT = "memories"
CANDIDATES = 200
"""How many rows each side (vector, full text) offers a search at most."""
_WHERE = {Place.USER: ("u", "user"), Place.USER_USAGE: ("u", "usage"),
          Place.PROJECT: ("p", "local"), Place.GLOBAL: ("p", "user"),
          Place.PROPOSAL: ("p", "delta")}
_LAYERED = {Place.GLOBAL: LayerName.USER, Place.PROPOSAL: LayerName.DELTA}
"""The places kept in the project's layers, as in the files (module docstring)."""
_SHARED_LAYERS = ("user", "delta", "base")
_CHUNK_COLUMNS = "'p', id, layer, kind, content, author, confidence, created_at_ms, sources"
_COLUMNS = "store, id, layer, kind, content, author, confidence, created_at_ms, sources"
_OWN_ROWS = ("project = %(project)s AND store = %(store)s AND layer = %(layer)s "
             "AND owner = %(actor)s AND NOT is_event AND kind = ANY(%(kinds)s)")
"""An actor's own memories of one scope (the parameters of :meth:`PgMemoryStore._own`)."""


def _chunk(row: Sequence[Any]) -> Chunk:
    return Chunk(int(row[1]), str(row[3]), str(row[4]), str(row[5]), float(row[6]),
                 int(row[7]), tuple(row[8] or ()))


def split_uses(data: dict[str, Any], glob: set[str]) -> list[tuple[dict[str, Any], bool]]:
    """A use event's counts as (data, shared) parts: the actor's own memories' (private)
    first, then the global memories' (``glob``, shared: every actor sees a global memory's
    uses); one part when all are of one kind. Saving and pushing split alike."""
    uses = data.get("uses")
    shared = {k: v for k, v in uses.items() if k in glob} if isinstance(uses, dict) else {}
    if not shared or not isinstance(uses, dict):
        return [(data, False)]
    own = {k: v for k, v in uses.items() if k not in glob}
    return ([({**data, "uses": own}, False)] if own else []) + [({**data, "uses": shared}, True)]


class PgMemoryStore:
    """Memories of one project (``database.project``) and of every actor's own store."""

    def __init__(self, database: Database, *, dim: int,
                 profile: dict[str, Any] | None = None) -> None:
        self.db = database
        self.project = database.project
        self.dim = dim
        self.profile = profile
        self._layers: PgStore | None = None
        self._opening = threading.Lock()

    @property
    def layers(self) -> PgStore:
        """The project's layers (opened on first use, over this store's own pool: one
        process keeps one pool per database)."""
        with self._opening:
            if self._layers is None:
                self._layers = PgStore(self.db.url, database=self.db)
            return self._layers

    def close(self) -> None:
        if self._layers is not None:
            self._layers.close()
            self._layers = None

    def _project(self, store: str) -> str:
        return "" if store == "u" else self.project

    def _lock(self, store: str, actor: str) -> str:
        return f"memory:u:{actor}" if store == "u" else f"memory:p:{self.project}"

    def _own(self, actor: str, place: Place, kinds: Sequence[str]) -> dict[str, Any]:
        """The parameters of ``_OWN_ROWS``: ``actor``'s memories of ``kinds`` at ``place``
        (user or project)."""
        store, layer = _WHERE[place]
        return {"project": self._project(store), "store": store, "layer": layer,
                "actor": actor, "kinds": list(kinds)}

    def transaction(self, place: Place, actor: str) -> AbstractContextManager[object]:
        if place in _LAYERED:
            return self.layers.transaction()
        return self.db.transaction(self._lock(_WHERE[place][0], actor))

    def append(self, place: Place, actor: str, memories: Sequence[NewMemory],
               events: Sequence[NewEvent]) -> list[MemoryRef]:
        if place in _LAYERED:
            ids = append_to_layer(self.layers, _LAYERED[place], memories, events, self.dim,
                                  profile=self.profile)
            return [MemoryRef("p", i) for i in ids]
        store, layer = _WHERE[place]
        project = self._project(store)
        now = int(time.time() * 1000)
        with self.db.transaction(self._lock(store, actor)) as conn:
            ids = next_ids(conn, len(memories) + len(events))
            rows: list[tuple[Any, ...]] = [
                (project, store, cid, layer, actor, False, False, m.kind, m.content, m.author,
                 float(m.confidence), now, Jsonb(list(m.sources)), None,
                 np.asarray(m.vector, dtype=np.float32).reshape(-1))
                for cid, m in zip(ids, memories, strict=False)]
            hide: list[int] = []
            for cid, e in zip(ids[len(memories):], events, strict=True):
                data = resolve_new(e.data, ids)
                subjects = [int(s) for s in resolve_new(list(e.subjects), ids)]
                parts = self._split_use(conn, place, e.kind, data)
                extra = next_ids(conn, len(parts) - 1)
                for (part, is_shared), rid in zip(parts, [cid, *extra], strict=True):
                    part_subjects = subjects if part is data else \
                        sorted(int(x) for x in part["uses"])
                    rows.append((project, store, rid, layer, actor, is_shared, True, e.kind,
                                 event_content(**part), e.author, 1.0, now,
                                 Jsonb(part_subjects), Jsonb(part), None))
                if (gone := hidden_by(e.kind, data, subjects)) is not None:
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

    def _split_use(self, conn: Conn, place: Place, kind: str, data: dict[str, Any]
                   ) -> list[tuple[dict[str, Any], bool]]:
        """A project use event counts global memories too: their counts go to a shared
        event (every actor sees a global memory's uses), the rest stay the actor's."""
        uses = data.get("uses")
        if kind != USE or place is not Place.PROJECT or not isinstance(uses, dict):
            return [(data, False)]
        ids = [int(k) for k in uses if isinstance(k, str) and k.isdigit()]
        got = rows(
            conn, "SELECT id FROM chunks WHERE project = %s AND layer IN ('user', 'base') "
            "AND id = ANY(%s) AND kind LIKE 'memory.%%'", (self.project, ids))
        return split_uses(data, {str(int(r[0])) for r in got})

    def version(self) -> Hashable:
        """The memories' revision and the project's layers' sizes and high waters (the
        review flow appends to the layers without this store)."""
        with self.db.connection() as conn:
            layered = rows(conn, "SELECT layer, n_docs, metadata->>'id_high_water' FROM "
                           "layers WHERE project = %s ORDER BY layer", (self.project,))
            return revision(conn, SUBJECT), tuple(tuple(r) for r in layered)

    def events(self, actor: str) -> list[StoredEvent]:
        """The actor's rows' events, and the memory events of the project's layers that
        the file store hands the actor: every one in user and base, in delta those
        ``readable_events`` leaves the actor."""
        with self.db.connection() as conn:
            got = rows(
                conn, "SELECT store, layer, id, kind, created_at_ms, data, sources FROM memories "
                "WHERE is_event AND ((project = '' AND store = 'u' AND owner = %s) OR "
                "(project = %s AND store = 'p' AND (owner = %s OR shared))) ORDER BY id",
                (actor, self.project, actor))
            layered = rows(
                conn, f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE project = %s AND layer = "
                "ANY(%s) AND kind LIKE %s AND kind = ANY(%s)",
                (self.project, list(_SHARED_LAYERS), META_PREFIX + "%",
                 list(MEMORY_EVENT_KINDS)))
        out = [StoredEvent(str(r[0]), "local" if r[1] == "usage" else str(r[1]), int(r[2]),
                           str(r[3]), int(r[4]), dict(r[5] or {}), tuple(r[6] or ()))
               for r in got if isinstance(r[5], dict)]
        shared = [StoredEvent("p", str(r[2]), c.id, c.kind, c.created_at_ms, data, c.sources)
                  for r in layered if (data := event_data(c := _chunk(r))) is not None]
        out += [e for e in shared if e.layer != "delta"]
        out += readable_events((e for e in shared if e.layer == "delta"), actor)
        out.sort(key=lambda e: e.id)
        return out

    def memories(self, actor: str, scopes: Sequence[Scope]) -> list[StoredMemory]:
        out: list[StoredMemory] = []
        with self.db.connection() as conn:
            for scope in (Scope.USER, Scope.PROJECT):
                if scope in scopes:
                    place = PLACE_OF_SCOPE[scope]
                    p = self._own(actor, place, actor_kinds(actor))
                    out.extend(StoredMemory(MemoryRef(p["store"], int(r[1])), place, _chunk(r))
                               for r in rows(conn, f"SELECT {_COLUMNS} FROM memories WHERE "
                                             f"{_OWN_ROWS} ORDER BY id", p))
            if Scope.GLOBAL in scopes:
                got = rows(
                    conn, f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE project = %s AND "
                    "layer = ANY(%s) AND kind LIKE 'memory.%%' ORDER BY id",
                    (self.project, list(_SHARED_LAYERS)))
                out.extend(shared_memories(actor, ((LayerName(str(r[2])), _chunk(r))
                                                   for r in got)))
        return out

    def get(self, actor: str, ref: MemoryRef) -> StoredMemory | None:
        place = Place.USER if ref.store == "u" else Place.PROJECT
        p = self._own(actor, place, actor_kinds(actor))
        with self.db.connection() as conn:
            found = row(conn, f"SELECT {_COLUMNS} FROM memories WHERE {_OWN_ROWS} "
                        "AND id = %(id)s", {**p, "id": ref.id})
        if found is not None:
            return StoredMemory(ref, place, _chunk(found))
        if ref.store == "u":
            return None
        return layered_memory(actor, ref, next((v for v in self.layers.versions(ref.id)
                                                if v[0].value in _SHARED_LAYERS), None))

    def search(self, actor: str, scope: Scope, text: str, vector: npt.NDArray[np.float32],
               categories: Sequence[str], k: int, *, lexical: bool = True
               ) -> list[Candidate]:
        if scope is Scope.GLOBAL:  # chunks of the user and base layers, as on files
            with self.db.connection() as conn:
                got = rows(conn, "SELECT DISTINCT kind FROM chunks WHERE project = %s AND "
                           "layer IN ('user', 'base') AND kind LIKE 'memory.%%'",
                           (self.project,))
            kinds = memory_kinds((str(r[0]) for r in got), categories)
            schema = self.layers.schema(SHARED_MEMORY_LAYERS) if kinds else None
            return search_layers(self.layers, "p", SHARED_MEMORY_LAYERS, kinds, text, vector,
                                 k, lexical=lexical, normalised=schema is not None
                                 and unit_vectors(schema.profile))
        place = PLACE_OF_SCOPE[scope]
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        kinds = memory_kinds(actor_kinds(actor), categories)
        params = {**self._own(actor, place, kinds), "q": q, "n": max(k, CANDIDATES),
                  "dim": int(q.shape[0])}
        if not kinds:
            return []
        base = (f"SELECT id, content, 1 - (embedding <=> %(q)s) FROM memories WHERE "
                f"{_OWN_ROWS} AND NOT hidden AND vector_dims(embedding) = %(dim)s")
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
        ids = list(found)
        cos = np.asarray([found[i][1] for i in ids], dtype=np.float32)
        lex = BM25Index([found[i][0] for i in ids]).scores(text).astype(np.float32) \
            if lexical and ids else np.zeros(len(ids), dtype=np.float32)
        fused = fuse(cos, lex) if lexical else cos
        order = sorted(range(len(ids)), key=lambda i: (-round(float(fused[i]), 6),
                                                       -cos[i], ids[i]))[:k]
        return [Candidate(MemoryRef(params["store"], ids[i]), float(cos[i]), float(lex[i]),
                          float(fused[i])) for i in order]

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
        layered = sorted({r.id for r in refs if r.store == "p"})
        if layered:
            with self.layers.transaction(), self.layers.cursor() as cur:
                cur.execute(_PURGE_LAYERED, {"project": self.project, "ids": layered,
                                             "kinds": list(actor_kinds(actor))})
                got = cur.fetchone()
                removed += int(str(got[0])) if got else 0
        return removed


_PURGE_LAYERED = """
WITH gone AS (
    DELETE FROM chunks WHERE project = %(project)s AND layer IN ('user', 'delta')
        AND id = ANY(%(ids)s) AND kind = ANY(%(kinds)s)
    RETURNING layer, id, kind, lex_tf, lex_len),
touched AS (
    SELECT g.layer, g.kind, t.term, array_agg(g.id) AS ids
    FROM gone AS g, jsonb_object_keys(g.lex_tf) AS t (term) GROUP BY g.layer, g.kind, t.term),
blocks AS (
    SELECT b.layer, b.term, b.kind, b.block, sediment_block_without(b.data, t.ids) AS data
    FROM posting_blocks AS b JOIN touched AS t ON b.project = %(project)s
        AND b.layer = t.layer AND b.term = t.term AND b.kind = t.kind),
kept AS (
    UPDATE posting_blocks AS p SET data = k.data FROM blocks AS k
    WHERE p.project = %(project)s AND p.layer = k.layer AND p.term = k.term
        AND p.kind = k.kind AND p.block = k.block AND k.data <> ''::bytea
        AND k.data <> p.data),
emptied AS (
    DELETE FROM posting_blocks AS p USING blocks AS k
    WHERE p.project = %(project)s AND p.layer = k.layer AND p.term = k.term
        AND p.kind = k.kind AND p.block = k.block AND k.data = ''::bytea),
df AS (
    UPDATE lexicon AS x SET df = x.df - s.n
    FROM (SELECT g.layer, t.term, count(*) AS n FROM gone AS g,
          jsonb_object_keys(g.lex_tf) AS t (term) GROUP BY g.layer, t.term) AS s
    WHERE x.project = %(project)s AND x.layer = s.layer AND x.term = s.term),
sizes AS (
    UPDATE layers AS l SET n_docs = l.n_docs - s.n, total_len = l.total_len - s.len
    FROM (SELECT layer, count(*) AS n, coalesce(sum(lex_len), 0) AS len FROM gone
          GROUP BY layer) AS s
    WHERE l.project = %(project)s AND l.layer = s.layer)
SELECT count(*) FROM gone
"""
"""Remove the actor's own memory chunks from the project's user and delta layers (never
base, never an event: the files' purge), keeping BM25's statistics and postings true."""

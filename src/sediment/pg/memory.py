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

import json
import threading
import time
from collections.abc import Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg.types.json import Jsonb

from sediment.format import Chunk
from sediment.format.profile import unit_vectors
from sediment.memory.events import MEMORY_EVENT_KINDS, USE, StoredEvent
from sediment.memory.model import CATEGORIES, MemoryRef, Scope, actor_kinds, parse_kind
from sediment.memory.store import (
    Candidate,
    NewEvent,
    NewMemory,
    Place,
    StoredMemory,
    layered_memory,
    resolve_new,
)
from sediment.pg.database import Conn, Database, bump, next_ids, revision, row, rows
from sediment.pg.store import PgStore
from sediment.search import SearchRequest
from sediment.search.analysis import plain_tokens
from sediment.search.bm25 import BM25Index
from sediment.search.fusion import ConvexFusion, Pool
from sediment.store import LayerName, NewChunk
from sediment.store.events import FORGET, META_PREFIX, SUPERSEDE, event_content

SUBJECT = "memories"
CANDIDATES = 200
"""How many rows each side (vector, full text) offers a search at most."""
_WHERE = {Place.USER: ("u", "user"), Place.USER_USAGE: ("u", "usage"),
          Place.PROJECT: ("p", "local"), Place.GLOBAL: ("p", "user"),
          Place.PROPOSAL: ("p", "delta")}
_FILE_LAYER = {"usage": "local"}
_LAYERED = {Place.GLOBAL: LayerName.USER, Place.PROPOSAL: LayerName.DELTA}
"""The places kept in the project's layers, as in the files (module docstring)."""
_GLOBAL_LAYERS = (LayerName.USER, LayerName.BASE)
_SHARED_LAYERS = ("user", "delta", "base")
_CHUNK_COLUMNS = "'p', id, layer, kind, content, author, confidence, created_at_ms, sources"
_COLUMNS = "store, id, layer, kind, content, author, confidence, created_at_ms, sources"


def _chunk(row: Sequence[Any]) -> Chunk:
    return Chunk(int(row[1]), str(row[3]), str(row[4]), str(row[5]), float(row[6]),
                 int(row[7]), tuple(row[8] or ()))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
                 profile: dict[str, Any] | None = None, layers: PgStore | None = None
                 ) -> None:
        self.db = database
        self.project = database.project
        self.dim = dim
        self.profile = profile
        self._layers = layers
        self._own_layers = layers is None
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
        if self._own_layers and self._layers is not None:
            self._layers.close()
            self._layers = None

    def _project(self, store: str) -> str:
        return "" if store == "u" else self.project

    def _lock(self, store: str, actor: str) -> str:
        return f"memory:u:{actor}" if store == "u" else f"memory:p:{self.project}"

    # -- writing ---------------------------------------------------------------------
    def transaction(self, place: Place, actor: str) -> AbstractContextManager[None]:
        if place in _LAYERED:
            return self.layers.transaction()
        return self._held(self._lock(_WHERE[place][0], actor))

    @contextmanager
    def _held(self, lock: str) -> Iterator[None]:
        with self.db.transaction(lock):
            yield

    def append(self, place: Place, actor: str, memories: Sequence[NewMemory],
               events: Sequence[NewEvent]) -> list[MemoryRef]:
        if place in _LAYERED:
            return self._append_layer(_LAYERED[place], memories, events)
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

    def _append_layer(self, layer: LayerName, memories: Sequence[NewMemory],
                      events: Sequence[NewEvent]) -> list[MemoryRef]:
        """Memories and events as chunks of the project's ``layer``, as the file store
        appends them to the same layer (events with the zero vector)."""
        store = self.layers
        with store.transaction():
            with store.cursor() as cur:
                ids = next_ids(cur.connection, len(memories) + len(events))
            items: list[NewChunk] = []
            vectors: list[npt.NDArray[np.float32]] = []
            for cid, m in zip(ids, memories, strict=False):
                items.append(NewChunk(m.kind, m.content, m.author, m.confidence, m.sources,
                                      id=cid))
                vectors.append(np.asarray(m.vector, dtype=np.float32).reshape(-1))
            zero = np.zeros(self.dim, dtype=np.float32)
            for cid, e in zip(ids[len(memories):], events, strict=True):
                data = resolve_new(e.data, ids)
                subjects = tuple(int(s) for s in resolve_new(list(e.subjects), ids))
                items.append(NewChunk(e.kind, event_content(**data), e.author, 1.0, subjects,
                                      id=cid))
                vectors.append(zero)
            if items:
                store.append(layer, items, np.stack(vectors), profile=self.profile,
                             allowed=(layer,))
        return [MemoryRef("p", i) for i in ids[:len(memories)]]

    def _split_use(self, conn: Conn, place: Place, kind: str, data: dict[str, Any],
                   shared: bool) -> list[tuple[dict[str, Any], bool]]:
        """A project use event counts global memories too: their counts go to a shared
        event (every actor sees a global memory's uses), the rest stay the actor's."""
        uses = data.get("uses")
        if kind != USE or place is not Place.PROJECT or not isinstance(uses, dict) or shared:
            return [(data, shared)]
        ids = [int(k) for k in uses if isinstance(k, str) and k.isdigit()]
        got = rows(
            conn, "SELECT id FROM chunks WHERE project = %s AND layer IN ('user', 'base') "
            "AND id = ANY(%s) AND kind LIKE 'memory.%%'", (self.project, ids))
        return split_uses(data, {str(int(r[0])) for r in got})

    # -- reading ---------------------------------------------------------------------
    def version(self) -> Hashable:
        """The memories' revision and the project's layers' sizes and high waters (the
        review flow appends to the layers without this store)."""
        with self.db.connection() as conn:
            layered = rows(conn, "SELECT layer, n_docs, metadata->>'id_high_water' FROM "
                           "layers WHERE project = %s ORDER BY layer", (self.project,))
            return revision(conn, SUBJECT), tuple(tuple(r) for r in layered)

    def events(self, actor: str) -> list[StoredEvent]:
        """The actor's rows' events, and the memory events of the project's layers that
        the file store hands the actor: every one in user and base, in delta those of
        the actor or of no actor."""
        with self.db.connection() as conn:
            got = rows(
                conn, "SELECT store, layer, id, kind, created_at_ms, data, sources FROM memories "
                "WHERE is_event AND ((project = '' AND store = 'u' AND owner = %s) OR "
                "(project = %s AND store = 'p' AND (owner = %s OR shared))) ORDER BY id",
                (actor, self.project, actor))
            layered = rows(
                conn, "SELECT layer, id, kind, created_at_ms, content, sources FROM chunks "
                "WHERE project = %s AND layer = ANY(%s) AND kind LIKE %s AND kind = ANY(%s)",
                (self.project, list(_SHARED_LAYERS), META_PREFIX + "%",
                 list(MEMORY_EVENT_KINDS)))
        out = [StoredEvent(str(r[0]), _FILE_LAYER.get(str(r[1]), str(r[1])), int(r[2]),
                           str(r[3]), int(r[4]), dict(r[5] or {}), tuple(r[6] or ()))
               for r in got if isinstance(r[5], dict)]
        for r in layered:
            try:
                data = json.loads(str(r[4]))
            except ValueError:
                continue
            if not isinstance(data, dict):
                continue
            who = data.get("actor")
            if r[0] == "delta" and isinstance(who, str) and who != actor:
                continue
            out.append(StoredEvent("p", str(r[0]), int(r[1]), str(r[2]), int(r[3]), data,
                                   tuple(r[5] or ())))
        out.sort(key=lambda e: e.id)
        return out

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
                    conn, f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE project = %s AND "
                    "layer = ANY(%s) AND kind LIKE 'memory.%%' ORDER BY id",
                    (self.project, list(_SHARED_LAYERS)))
                out.extend(_shared_memories(got, actor))
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
                "AND id = %s AND layer = 'local' AND NOT is_event AND owner = %s "
                "AND kind = ANY(%s)", (self.project, ref.id, actor, list(actor_kinds(actor))))
        if found is not None:
            return StoredMemory(ref, Place.PROJECT, _chunk(found), "local")
        return layered_memory(actor, ref, [(n, c) for n, c in self.layers.versions(ref.id)
                                           if n.value in _SHARED_LAYERS])

    def search(self, actor: str, scope: Scope, text: str, vector: npt.NDArray[np.float32],
               categories: Sequence[str], k: int, *, lexical: bool = True
               ) -> list[Candidate]:
        cats = [c for c in CATEGORIES if c in categories]
        if not cats:
            return []
        if scope is Scope.GLOBAL:
            return self._search_global(text, vector, cats, k, lexical=lexical)
        if scope is Scope.USER:
            store, where = "u", ("project = '' AND store = 'u' AND layer = 'user' "
                                 "AND owner = %(actor)s AND kind = ANY(%(kinds)s)")
        else:
            store, where = "p", ("project = %(project)s AND store = 'p' AND layer = 'local' "
                                 "AND owner = %(actor)s AND kind = ANY(%(kinds)s)")
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

    def _search_global(self, text: str, vector: npt.NDArray[np.float32],
                       cats: Sequence[str], k: int, *, lexical: bool) -> list[Candidate]:
        """Global memories are chunks of the user and base layers: searched by the
        project's own search, as the file store searches its layers."""
        with self.db.connection() as conn:
            got = rows(conn, "SELECT DISTINCT kind FROM chunks WHERE project = %s AND "
                       "layer IN ('user', 'base') AND kind LIKE 'memory.%%'", (self.project,))
        kinds = sorted(str(r[0]) for r in got
                       if (p := parse_kind(str(r[0]))) is not None and p[0] in cats)
        if not kinds:
            return []
        schema = self.layers.schema(_GLOBAL_LAYERS)
        normalised = schema is not None and unit_vectors(schema.profile)
        request = SearchRequest(text=text if lexical else None, k=k, kinds=tuple(kinds),
                                layers=_GLOBAL_LAYERS, mode="hybrid" if lexical else "vector")
        result = self.layers.search(request, np.asarray(vector, dtype=np.float32),
                                    normalised=normalised)
        return [Candidate(MemoryRef("p", h.id), float(h.vector_score or 0.0),
                          float(h.lexical_score or 0.0), float(h.score))
                for h in result.hits]

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


def _shared_memories(got: Sequence[Sequence[Any]], actor: str) -> list[StoredMemory]:
    """The memory chunks of the project's layers an actor reads, as the file store lists
    them: each global one once (user before base), then the actor's own proposals."""
    by_layer: dict[str, list[Sequence[Any]]] = {}
    for r in got:
        if parse_kind(str(r[3])) is not None:
            by_layer.setdefault(str(r[2]), []).append(r)
    out: list[StoredMemory] = []
    seen: set[int] = set()
    for name in _GLOBAL_LAYERS:
        for r in by_layer.get(name.value, []):
            if int(r[1]) not in seen:
                seen.add(int(r[1]))
                out.append(StoredMemory(MemoryRef("p", int(r[1])), Place.GLOBAL, _chunk(r),
                                        name.value))
    own = set(actor_kinds(actor))
    for r in by_layer.get("delta", []):
        if int(r[1]) not in seen and str(r[3]) in own:
            out.append(StoredMemory(MemoryRef("p", int(r[1])), Place.PROPOSAL, _chunk(r),
                                    "delta"))
    return out


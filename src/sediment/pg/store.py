"""A project in PostgreSQL as a :class:`~sediment.store.LayerStore`.

Every rule of the layer files holds here too: base is never written by ``append``, new
chunks get ids no layer uses or ever used (from the ``chunk_ids`` sequence, which never
hands a value out twice and ends with the project range of written ids), an explicit id
may not repeat within its layer, the layers of a project share one vector schema and
embedding profile. A write transaction holds the project's advisory lock, so a
read-check-write sequence (a proposal, a decision) cannot interleave with another writer,
as the file lock guarantees for the files.

Connections come from a pool (:class:`~sediment.pg.database.Database`, shared with the
team server's other stores when given) that replaces broken ones, so a server whose
database restarted recovers by itself; a failure is a
:class:`~sediment.errors.StoreUnavailableError`, and a statement or lock wait that runs
past the statement timeout a :class:`~sediment.errors.LockTimeoutError`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import errors as pg_errors
from psycopg import sql

from sediment.errors import (
    LockTimeoutError,
    NotFoundError,
    PermissionDeniedError,
    SchemaMismatchError,
    ValidationError,
)
from sediment.format import Chunk, Source
from sediment.format.profile import CACHE_KEY_ALG, check_compatible
from sediment.format.profile import quant_scale as profile_quant_scale
from sediment.pg.connection import (
    CONNECT_TIMEOUT_S,
    STATEMENT_TIMEOUT_MS,
    StoreUrl,
    parse_store_url,
)
from sediment.pg.database import Database, next_ids
from sediment.pg.projects import require_project
from sediment.search.analysis import DEFAULT_ANALYZER, analyzer
from sediment.search.engine import SearchRequest, SearchResult
from sediment.store import AGENT_WRITABLE, PRECEDENCE, LayerName, LayerSummary, NewChunk, Schema
from sediment.store.commit import materialise
from sediment.store.events import (
    META_PREFIX,
    PROPOSAL_EVENT_KINDS,
    Event,
    ProposalState,
    fold_proposals,
    iter_events,
)
from sediment.store.ids import PROJECT_IDS, recorded_high_water
from sediment.store.layerset import unit_rows

Cursor = psycopg.Cursor[tuple[Any, ...]]
CHUNK_COLS = "layer, id, kind, content, author, confidence, created_at_ms, sources"
COPY_TYPES = ["text", "text", "int8", "text", "text", "text", "float4", "int8", "jsonb", "int4",
              "vector", "jsonb", "int4"]
LOCK_CLASS = 0x5ED1
"""First key of every project's advisory lock (the second is a hash of its name)."""
NEAREST_PAGE = 10_000
"""Rows of (id, vector) ``nearest`` holds at once."""


def lexical(content: str) -> tuple[dict[str, int], int]:
    """The analysed terms of ``content`` with their counts, and its length in terms: what
    BM25 reads of a document (the default analyzer, as the file store's postings)."""
    terms = analyzer(DEFAULT_ANALYZER)(content)
    return dict(Counter(terms)), len(terms)


def _sources(value: Any) -> tuple[Source, ...]:
    return tuple(s for s in (value or ()) if isinstance(s, int | str))


def chunk_of(row: Sequence[Any], offset: int = 1) -> Chunk:
    """A :class:`Chunk` from the columns ``CHUNK_COLS`` names, after the layer."""
    cid, kind, content, author, confidence, created, sources = row[offset:offset + 7]
    return Chunk(int(cid), kind, content, author, float(confidence), int(created),
                 _sources(sources))


def as_vector(value: Any, dim: int) -> npt.NDArray[np.float32]:
    if value is None:
        return np.zeros(dim, dtype=np.float32)
    arr = value.to_numpy() if hasattr(value, "to_numpy") else np.asarray(value)
    return np.asarray(arr, dtype=np.float32).copy()


class PgStore:
    """One project of a PostgreSQL store (see the module docstring)."""

    def __init__(self, url: str | StoreUrl, *, connect_timeout: float = CONNECT_TIMEOUT_S,
                 statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
                 database: Database | None = None) -> None:
        self.url = url if isinstance(url, StoreUrl) else parse_store_url(url)
        self.project = self.url.project
        if database is not None:  # its pool's timeouts are the ones that apply
            connect_timeout = database.connect_timeout
            statement_timeout_ms = database.statement_timeout_ms
        self.connect_timeout = connect_timeout
        self.statement_timeout_ms = statement_timeout_ms
        self._own_db = database is None
        self.db = database if database is not None else Database(
            self.url, connect_timeout=connect_timeout,
            statement_timeout_ms=statement_timeout_ms)
        self._local = threading.local()
        try:
            with self.db.connection():
                pass  # the schema is checked on the first connection
        except BaseException:
            self.close()
            raise

    # -- connections ---------------------------------------------------------------------
    @contextlib.contextmanager
    def _timeouts(self) -> Iterator[None]:
        try:
            yield
        except pg_errors.QueryCanceled as exc:
            raise LockTimeoutError(
                f"store {self.url.redacted}: a statement or a wait for another writer ran "
                f"past {self.statement_timeout_ms / 1000:g}s") from exc

    @contextlib.contextmanager
    def cursor(self) -> Iterator[Cursor]:
        """A cursor of a pooled connection (the thread's open transaction's, inside one);
        database failures become Sediment errors naming the store."""
        with self.db.connection() as conn, self._timeouts(), conn.cursor() as cur:
            yield cur

    def close(self) -> None:
        if self._own_db:
            self.db.close()

    def require_project(self) -> PgStore:
        """This store, once its project is known to exist (a ``NotFoundError`` listing
        the store's projects otherwise): what every command but ``push`` and ``db``
        checks first."""
        with self.db.connection() as conn:
            require_project(conn, self.project, self.url.redacted)
        return self

    def __enter__(self) -> PgStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------
    def layer_files(self) -> None:
        return None

    def location(self, name: LayerName) -> str:
        return f"{self.url.redacted} project {self.project}, {name.value} layer"

    def _layer_rows(self, names: Iterable[LayerName] | None = None) -> list[tuple[Any, ...]]:
        wanted = [n.value for n in (PRECEDENCE if names is None else names)]
        with self.cursor() as cur:
            cur.execute("SELECT layer, n_docs, dim, element_type, metadata, quant_scale "
                        "FROM layers WHERE project = %s AND layer = ANY(%s)",
                        (self.project, wanted))
            rows = cur.fetchall()
        order = {n.value: i for i, n in enumerate(PRECEDENCE)}
        return sorted(rows, key=lambda r: order[r[0]])

    def present(self, names: Iterable[LayerName] | None = None) -> list[LayerName]:
        return [LayerName(r[0]) for r in self._layer_rows(names)]

    def summaries(self, names: Iterable[LayerName] | None = None) -> list[LayerSummary]:
        """The summaries (without ids) of the present layers among ``names``, in precedence
        order, by one read: what a search checks before it runs."""
        return [LayerSummary(LayerName(layer), self.location(LayerName(layer)), int(n),
                             int(dim), etype, (metadata or {}).get("embedding_profile"), ())
                for layer, n, dim, etype, metadata, _ in self._layer_rows(names)]

    def summary(self, name: LayerName, *, max_ids: int = 1000) -> LayerSummary | None:
        rows = self._layer_rows([name])
        if not rows:
            return None
        _, n, dim, etype, metadata, _ = rows[0]
        ids: tuple[int, ...] = ()
        if max_ids > 0:
            with self.cursor() as cur:
                cur.execute("SELECT id FROM chunks WHERE project = %s AND layer = %s "
                            "ORDER BY row_no LIMIT %s", (self.project, name.value, max_ids))
                ids = tuple(int(r[0]) for r in cur.fetchall())
        return LayerSummary(name, self.location(name), int(n), int(dim), etype,
                            (metadata or {}).get("embedding_profile"), ids)

    def layer_metadata(self, name: LayerName) -> dict[str, Any] | None:
        rows = self._layer_rows([name])
        return dict(rows[0][4] or {}) if rows else None

    def quant_scale(self, name: LayerName) -> float | None:
        rows = self._layer_rows([name])
        return float(rows[0][5]) if rows and rows[0][5] is not None else None

    def schema(self, names: Iterable[LayerName] | None = None) -> Schema | None:
        found: Schema | None = None
        profile_from: tuple[str, dict[str, Any]] | None = None
        for layer, n, dim, etype, metadata, _ in self._layer_rows(names):
            if n == 0 and dim == 0:
                continue
            if found is None:
                found = Schema(dim, etype, None, layer)
            elif (dim, etype) != (found.dim, found.element_type):
                raise SchemaMismatchError(
                    f"layers {found.source} ({found.dim} dims, {found.element_type}) and "
                    f"{layer} ({dim} dims, {etype}) do not share a schema (RFC 8.3)")
            prof = (metadata or {}).get("embedding_profile")
            if prof is not None:
                if profile_from is None:
                    profile_from = (layer, prof)
                else:
                    check_compatible(profile_from[1], prof, a_name=f"layer {profile_from[0]}",
                                     b_name=f"layer {layer}",
                                     consequence="they cannot be searched together (RFC 8.3)")
        if found is not None and profile_from is not None:
            found = Schema(found.dim, found.element_type, profile_from[1], found.source)
        return found

    def versions(self, chunk_id: int) -> list[tuple[LayerName, Chunk]]:
        with self.cursor() as cur:
            cur.execute(f"SELECT {CHUNK_COLS} FROM chunks WHERE project = %s AND id = %s",
                        (self.project, chunk_id))
            rows = cur.fetchall()
        found = {LayerName(r[0]): chunk_of(r) for r in rows}
        return [(n, found[n]) for n in PRECEDENCE if n in found]

    def get(self, chunk_id: int) -> tuple[LayerName, Chunk] | None:
        v = self.versions(chunk_id)
        return v[0] if v else None

    def chunk(self, name: LayerName, chunk_id: int) -> Chunk | None:
        with self.cursor() as cur:
            cur.execute(f"SELECT {CHUNK_COLS} FROM chunks WHERE project = %s AND layer = %s "
                        "AND id = %s", (self.project, name.value, chunk_id))
            row = cur.fetchone()
        return chunk_of(row) if row else None

    def vector(self, name: LayerName, chunk_id: int) -> npt.NDArray[np.float32]:
        with self.cursor() as cur:
            cur.execute("SELECT embedding, dim FROM chunks WHERE project = %s AND layer = %s "
                        "AND id = %s", (self.project, name.value, chunk_id), binary=True)
            row = cur.fetchone()
        if row is None:
            raise NotFoundError(f"no chunk {chunk_id} in the {name.value} layer")
        return as_vector(row[0], int(row[1]))

    def chunks(self, name: LayerName) -> Iterator[tuple[Chunk, npt.NDArray[np.float32]]]:
        """Streamed in pages (a server-side cursor), in the order they were written."""
        rows = self._layer_rows([name])
        dim = int(rows[0][2]) if rows else 0
        with self.db.connection() as conn, self._timeouts(), conn.transaction(), \
                conn.cursor(name="sediment_chunks") as cur:
            cur.execute(f"SELECT {CHUNK_COLS}, embedding FROM chunks WHERE project = %s "
                        "AND layer = %s ORDER BY row_no", (self.project, name.value),
                        binary=True)
            while rows := cur.fetchmany(2000):
                for row in rows:
                    yield chunk_of(row), as_vector(row[8], dim)

    def kind_counts(self, name: LayerName) -> dict[str, int]:
        with self.cursor() as cur:
            cur.execute("SELECT kind, count(*) FROM chunks WHERE project = %s AND layer = %s "
                        "GROUP BY kind", (self.project, name.value))
            return {str(k): int(n) for k, n in cur.fetchall()}

    def nearest(self, name: LayerName, queries: npt.NDArray[np.float32],
                exclude: Sequence[int], threshold: float, limit: int
                ) -> list[list[tuple[float, Chunk]]]:
        """Ids and vectors only are streamed (a server-side cursor, one page in memory at
        once) and compared here, as the file store compares its arrays; then the matches'
        chunks are read: one pass over the layer whatever the number of queries (an exact
        scan per query in the database took 4.4 s against 1.2 s here for 50 queries over
        20,000 rows; ``python -m bench.web_review``)."""
        dim = queries.shape[1] if queries.ndim == 2 else 0
        found: list[list[tuple[float, int]]] = [[] for _ in range(len(queries))]
        if not len(queries) or not dim:
            return [[] for _ in found]
        q = unit_rows(np.asarray(queries, dtype=np.float32))
        with self.db.connection() as conn, self._timeouts(), conn.transaction(), \
                conn.cursor(name="sediment_nearest") as cur:
            cur.execute("SELECT id, embedding FROM chunks WHERE project = %s AND "
                        "layer = %s AND kind NOT LIKE %s AND dim = %s",
                        (self.project, name.value, META_PREFIX + "%", dim), binary=True)
            while rows := cur.fetchmany(NEAREST_PAGE):
                ids = [int(cast(Any, r[0])) for r in rows]
                sims = q @ unit_rows(np.vstack([as_vector(r[1], dim) for r in rows])).T
                for i, j in zip(*np.nonzero(sims >= threshold), strict=True):
                    if ids[j] != exclude[i]:
                        found[i].append((float(sims[i, j]), ids[j]))
        for hits in found:
            hits.sort(key=lambda h: (-h[0], h[1]))
            del hits[limit:]
        wanted = sorted({cid for hits in found for _, cid in hits})
        with self.cursor() as cur:
            cur.execute(f"SELECT {CHUNK_COLS} FROM chunks WHERE project = %s AND layer = %s "
                        "AND id = ANY(%s)", (self.project, name.value, wanted))
            chunks = {c.id: c for c in map(chunk_of, cur.fetchall())}
        return [[(sim, chunks[cid]) for sim, cid in hits] for hits in found]

    def events(self, names: Iterable[LayerName] | None = None) -> list[Event]:
        return self._events(names)

    def _events(self, names: Iterable[LayerName] | None = None,
                kinds: Sequence[str] | None = None) -> list[Event]:
        """The events, or those of ``kinds`` only: a team server logs an event per write,
        which the queue need not transfer and parse."""
        wanted = [n.value for n in (PRECEDENCE if names is None else names)]
        only = sql.SQL(" AND kind = ANY(%s)") if kinds is not None else sql.SQL("")
        with self.cursor() as cur:
            cur.execute(sql.SQL("SELECT {} FROM chunks WHERE project = %s AND layer = ANY(%s) "
                                "AND kind LIKE %s{}").format(sql.SQL(CHUNK_COLS), only),
                        (self.project, wanted, META_PREFIX + "%",
                         *([list(kinds)] if kinds is not None else [])))
            rows = cur.fetchall()
        return list(iter_events((LayerName(r[0]), chunk_of(r)) for r in rows))

    def proposals(self) -> dict[int, ProposalState]:
        events = self._events(kinds=PROPOSAL_EVENT_KINDS)
        pending = [s.context_id for s in fold_proposals(events).values()
                   if s.status == "pending"]
        copied = self._copied_to_user(pending)
        return fold_proposals(events, copied_to_user=copied.__contains__)

    def _copied_to_user(self, context_ids: list[int]) -> set[int]:
        """Which of ``context_ids`` user holds with the proposed content: one query for
        all (a query per pending proposal made every fold cost a round trip each)."""
        if not context_ids:
            return set()
        with self.cursor() as cur:
            cur.execute("SELECT u.id FROM chunks u JOIN chunks p ON p.project = u.project "
                        "AND p.id = u.id AND p.layer = ANY(%s) AND p.content = u.content "
                        "WHERE u.project = %s AND u.layer = 'user' AND u.id = ANY(%s)",
                        (["delta", "local"], self.project, context_ids))
            return {int(r[0]) for r in cur.fetchall()}

    def high_water(self) -> int:
        with self.cursor() as cur:
            cur.execute("SELECT coalesce(max(id), 0) FROM chunks WHERE project = %s",
                        (self.project,))
            row = cur.fetchone()
        top = int(row[0]) if row else 0
        for r in self._layer_rows():
            top = max(top, recorded_high_water(r[4]))
        return top

    def search(self, request: SearchRequest, query_vec: npt.NDArray[np.float32] | None, *,
               normalised: bool = False) -> SearchResult:
        from sediment.pg.search import run

        return run(self, request, query_vec, normalised=normalised)

    def hidden_ids(self, actor: str | None = None) -> frozenset[int]:
        from sediment.pg.search import folded

        present = self.present()
        return folded(self, present).answer(present, actor)

    def private_ids(self, actor: str | None) -> frozenset[int]:
        from sediment.pg.search import folded

        if actor is None:
            return frozenset()
        present = self.present()  # every layer: a proposal in delta shares a local note
        return folded(self, present).private(present, actor)

    # -- writing -------------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One database transaction holding the project's advisory lock (nests)."""
        depth = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        try:
            with self.db.transaction() as conn:
                conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                             (LOCK_CLASS, self.project))
                self._local.depth = 1
                try:
                    yield
                finally:
                    self._local.depth = 0
        except pg_errors.QueryCanceled as exc:
            raise LockTimeoutError(
                f"store {self.url.redacted}: another writer held project {self.project} for "
                f"more than {self.statement_timeout_ms / 1000:g}s") from exc

    def append(self, name: LayerName, items: Sequence[NewChunk],
               vectors: npt.NDArray[np.float32], *, profile: Any,
               embedder_metadata: Any = None, allowed: Sequence[LayerName] = AGENT_WRITABLE,
               element_type: str = "f32") -> list[int]:
        """As :meth:`LayerSet.append <sediment.store.LayerSet.append>`, into the project."""
        if name is LayerName.BASE:
            raise PermissionDeniedError(
                "the base layer is immutable (RFC 6.1): write to local or delta, or push a "
                "new compiled base (`sediment push --replace-base`)")
        if name not in allowed:
            names = ", ".join(n.value for n in allowed)
            raise PermissionDeniedError(
                f"writes to the {name.value} layer are not allowed here (allowed: {names})")
        vecs = np.asarray(vectors, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != len(items):
            raise ValidationError(f"need one vector per chunk: {len(items)} chunks, vectors of "
                                  f"shape {vecs.shape}")
        if not items:
            return []
        with self.transaction():
            return self._append_locked(name, items, vecs, profile, embedder_metadata,
                                       element_type)

    def _append_locked(self, name: LayerName, items: Sequence[NewChunk],
                       vecs: npt.NDArray[np.float32], profile: Any, embedder_metadata: Any,
                       element_type: str) -> list[int]:
        schema = self.schema()
        dim = int(vecs.shape[1])
        if schema is not None and schema.dim != dim:
            raise SchemaMismatchError(f"new vectors have {dim} dims but the project has "
                                      f"{schema.dim} (layer {schema.source})")
        if schema is not None:
            check_compatible(profile, schema.profile, a_name="the active embedder",
                             b_name=f"the layers (from {schema.source})",
                             consequence="new vectors must come from the embedder that made "
                                         "the layers' vectors")
        explicit = [i.id for i in items if i.id is not None]
        with self.cursor() as cur:
            taken: set[int] = set()
            if explicit:
                cur.execute("SELECT id FROM chunks WHERE project = %s AND layer = %s AND "
                            "id = ANY(%s)", (self.project, name.value, explicit))
                taken = {int(r[0]) for r in cur.fetchall()}
            fresh = sum(1 for i in items if i.id is None)
            new_ids = next_ids(cur.connection, fresh)
        chunks = materialise(items, name.value, iter(new_ids), taken, int(time.time() * 1000))
        etype = schema.element_type if schema is not None else element_type
        self.ensure_layer(name, dim, etype, profile, embedder_metadata)
        self.insert(name, chunks, vecs)
        self.note_ids(name, [c.id for c in chunks])
        return [c.id for c in chunks]

    def ensure_layer(self, name: LayerName, dim: int, element_type: str, profile: Any,
                     embedder_metadata: Any = None, metadata: dict[str, Any] | None = None,
                     quant_scale: float | None = None) -> None:
        """Create the project and the layer's row if missing; record the vector schema and
        the embedding profile on a layer that has none yet (as a layer file's first
        write does)."""
        current = self.layer_metadata(name)
        meta: dict[str, Any] = dict(metadata if metadata is not None else current or {})
        meta.setdefault("v", 1)
        if profile is not None and "embedding_profile" not in meta:
            meta["embedding_profile"] = dict(profile)
            meta["cache_key_alg"] = CACHE_KEY_ALG
            if embedder_metadata:
                meta["embedder_metadata"] = dict(embedder_metadata)
        meta.setdefault("tool_name", "sediment")
        if quant_scale is None:
            quant_scale = profile_quant_scale(element_type, profile)
        with self.cursor() as cur:
            cur.execute("INSERT INTO projects (name) VALUES (%s) ON CONFLICT DO NOTHING",
                        (self.project,))
            cur.execute(
                "INSERT INTO layers AS l (project, layer, dim, element_type, quant_scale, "
                "metadata) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (project, layer) DO "
                "UPDATE SET metadata = excluded.metadata, dim = CASE WHEN l.dim = 0 THEN "
                "excluded.dim ELSE l.dim END, quant_scale = coalesce(l.quant_scale, "
                "excluded.quant_scale)",
                (self.project, name.value, dim, element_type, quant_scale, json.dumps(meta)))

    def note_ids(self, name: LayerName, ids: Iterable[int]) -> None:
        """Record the largest of ``ids`` (a layer's chunks and recorded high-water marks) in
        the layer's ``id_high_water`` and move the id sequence past those of the project
        range, so no writer is ever given an id a pushed or imported chunk has. Ids of
        another range (a foreign file's, a hand-made one's) never move it: the sequence
        ends with the project range, and a file's allocator skips them alike."""
        ids = list(ids)
        if not ids:
            return
        top, ours = max(ids), PROJECT_IDS.high_water(ids)
        with self.cursor() as cur:
            cur.execute("UPDATE layers SET metadata = jsonb_set(coalesce(metadata, '{}'), "
                        "'{id_high_water}', to_jsonb(greatest(coalesce((metadata->>"
                        "'id_high_water')::bigint, 0), %s::bigint))) WHERE project = %s AND "
                        "layer = %s", (top, self.project, name.value))
            if ours in PROJECT_IDS:
                cur.execute("SELECT setval('chunk_ids', greatest(%s, (SELECT CASE WHEN "
                            "is_called THEN last_value ELSE last_value - 1 END FROM "
                            "chunk_ids)))", (ours,))

    def insert(self, name: LayerName, chunks: Sequence[Chunk],
               vecs: npt.NDArray[np.float32]) -> None:
        """Rows for ``chunks`` (ids already decided and checked), with their lexical data,
        by one binary COPY (the trigger then counts terms once for the batch). Binary, as
        vectors in text cost a float-to-decimal formatting per element: 1M rows of 384 dims
        spent about ten minutes in it."""
        dim = int(vecs.shape[1]) if vecs.ndim == 2 else 0
        with self.cursor() as cur, cur.copy(
                "COPY chunks (project, layer, id, kind, content, author, confidence, "
                "created_at_ms, sources, dim, embedding, lex_tf, lex_len) FROM STDIN "
                "(FORMAT BINARY)") as cp:
            cp.set_types(COPY_TYPES)
            for c, v in zip(chunks, vecs, strict=True):
                tf, length = lexical(c.content)
                cp.write_row((self.project, name.value, c.id, c.kind, c.content, c.author,
                              float(c.confidence), c.created_at_ms, list(c.sources), dim,
                              v if dim else None, tf, length))

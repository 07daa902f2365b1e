"""Hybrid search inside PostgreSQL, ranked as the file engine ranks (search/engine.py).

Per layer, each retriever proposes its best ``c`` candidates: the vector side in SQL by
pgvector, exactly (a scan ordered by distance) or through an HNSW index when the layer is
large enough to have one (``ensure_vector_index``), falling back to exact when the index's
answer, filtered after the index walk, comes up short; the lexical side by Okapi BM25
summed in numpy, as the file store sums it, from the posting blocks of the query's terms
(table ``posting_blocks``, migration 0074), with document frequencies, document count and
average length summed over the layers searched (the ``lexicon`` and ``layers`` tables).
Then, as in the engine, every candidate is scored by both retrievers (in numpy, in
float32: vectors from the rows fetched, BM25 from the blocks' sums), and the pool goes
to the engine's own ranking core (``search.ranking.rank``: fusion, precedence, hidden ids,
the filter on the version shown), then to the request's rerankers.

The lexical side uses the default (``english``) analyzer, the one the rows are indexed
with; asking for another is an error naming it.

Cost: a search is two round trips whatever the number of layers (:func:`run`; three for
a store's first search), each statement reads through an index (the HNSW graph, the
blocks' key, the events' partial index, the primary key), the blocks are summed while the
server walks the graph, and the walk is as wide as the file store's (:func:`breadth`).
``hnsw.ef_search`` is set per session, once per connection, so a transaction-pooling
proxy between the server and PostgreSQL would mix breadths between clients (results stay
right, only their completeness varies).
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from sediment.errors import ValidationError
from sediment.format import Chunk
from sediment.pg.store import CHUNK_COLS, as_vector, chunk_of
from sediment.search.analysis import DEFAULT_ANALYZER, analyzer
from sediment.search.ann import ANN_MIN_ROWS, MAX_FETCH, default_breadth
from sediment.search.bm25 import QueryStats, stats_of, term_scores
from sediment.search.engine import SearchRequest, SearchResult, check_schema
from sediment.search.hits import Hit
from sediment.search.ranking import Candidates, default_candidates, rank
from sediment.search.vector import Metric, scores_of
from sediment.store import PRECEDENCE, LayerName
from sediment.store.events import (
    MEMORY_KIND_PREFIX,
    META_PREFIX,
)
from sediment.store.rules import HiddenSets, counted_in_statistics

if TYPE_CHECKING:
    from sediment.pg.store import Cursor, PgStore

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]


def index_name(dim: int, dot: bool, project: str | None = None) -> str:
    """The HNSW index of ``dim``-dimension vectors: ``project``'s own, or (None) the one
    that Sediment before per-project indexes built over every project of the server."""
    name = f"chunks_hnsw_{dim}_{'ip' if dot else 'cos'}"
    if project is None:
        return name
    return f"{name}_{hashlib.sha256(project.encode()).hexdigest()[:16]}"


def ensure_vector_index(store: PgStore, dim: int, *, dot: bool = True) -> str:
    """Create the project's HNSW index for ``dim``-dimension vectors (inner product for
    unit-length rows, else cosine) if it is missing; building it over many rows takes
    minutes.

    One index per project, not one for the server: pgvector filters an index walk's
    answer after the walk, so with one shared graph a project holding a small share of the
    server's chunks got few of its own rows back and was scanned exactly instead. A
    partial index on the project is walked only through that project's rows."""
    name = index_name(dim, dot, store.project)
    ops = "vector_ip_ops" if dot else "vector_cosine_ops"
    with store.cursor() as cur:
        cur.execute("SET statement_timeout = 0")
        try:
            cur.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON chunks USING hnsw "
                                "((embedding::vector({})) {}) WHERE dim = {} AND project = {}"
                                ).format(sql.Identifier(name), sql.Literal(dim), sql.SQL(ops),
                                         sql.Literal(dim), sql.Literal(store.project)))
        finally:
            cur.execute(sql.SQL("SET statement_timeout = {}").format(
                sql.Literal(store.statement_timeout_ms)))
    return name


def _usable_index(store: PgStore, cur: Cursor, dim: int, dot: bool) -> str | None:
    """The HNSW index a search of ``store``'s project walks: its own, else a shared one
    left by an earlier Sediment, else None (exact scans).

    One lookup answers both. The project's own index, once seen, is remembered for the
    store's life (a query written for it stays right without it, only slower: the inner
    scan then sorts every row); any other answer for ``RECHECK_S``, so a store without its
    own index pays no lookup per search and still finds one that a push builds later."""
    own, shared = index_name(dim, dot, store.project), index_name(dim, dot)
    known = _indexes.setdefault(store, {})
    hit = known.get((dim, dot))
    if hit is not None and (hit[0] == own or hit[1] > time.monotonic()):
        return hit[0]
    cur.execute("SELECT indexname FROM pg_indexes WHERE indexname = ANY(%s)", ([own, shared],))
    found = {str(r[0]) for r in cur.fetchall()}
    name = own if own in found else shared if shared in found else None
    known[(dim, dot)] = (name, time.monotonic() + RECHECK_S)
    return name


RECHECK_S = 60.0
"""How long a search trusts that a project has no HNSW index of its own."""
_indexes: weakref.WeakKeyDictionary[PgStore, dict[tuple[int, bool], tuple[str | None, float]]]
_indexes = weakref.WeakKeyDictionary()
_breadths: weakref.WeakKeyDictionary[psycopg.Connection[Any], int] = (
    weakref.WeakKeyDictionary())


def _set_breadth(cur: Cursor, ef: int) -> None:
    """``hnsw.ef_search = ef`` for this connection's next queries: set for the session and
    remembered per connection, so a run of searches at one breadth pays no statement for
    it. Inside a transaction (which might roll the setting back) it is set for that
    transaction only and not remembered."""
    conn = cur.connection
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    if idle and _breadths.get(conn) == ef:
        return
    scope = "SESSION" if idle else "LOCAL"
    cur.execute(sql.SQL("SET {} hnsw.ef_search = {}").format(sql.SQL(scope), sql.Literal(ef)))
    if idle:
        _breadths[conn] = ef
    else:
        _breadths.pop(conn, None)


def _kind_filter(request: SearchRequest) -> tuple[sql.Composable, list[Any]]:
    if request.kinds:
        return sql.SQL("c.kind = ANY(%s)"), [list(request.kinds)]
    if request.include_meta:  # events when asked for; memories never (store.rules)
        return sql.SQL("c.kind NOT LIKE %s"), [MEMORY_KIND_PREFIX + "%"]
    return (sql.SQL("c.kind NOT LIKE %s AND c.kind NOT LIKE %s"),
            [META_PREFIX + "%", MEMORY_KIND_PREFIX + "%"])


Query = tuple[sql.SQL | sql.Composed, list[Any] | dict[str, Any]]
LAYER_COUNTS = ("SELECT layer, n_docs, total_len, dim, uncounted_docs, uncounted_len "
                "FROM layers WHERE project = %s AND layer = ANY(%s)")


class _Lexical:
    """The query's BM25 statistics over the layers searched: its terms first (before any
    statement), then their document frequencies (:meth:`query`, sent with the first
    statements) and the layers' counts (:meth:`load`)."""

    def __init__(self, request: SearchRequest) -> None:
        self.k1, self.b = request.bm25.k1, request.bm25.b
        self.general = not request.kinds or all(counted_in_statistics(k)
                                                for k in request.kinds)
        self.wanted: list[str] = []
        self.stats: QueryStats | None = None
        if request.mode == "vector" or not request.text:
            return
        if request.bm25.analyzer != DEFAULT_ANALYZER:
            raise ValidationError(f"the PostgreSQL store indexes text with the "
                                  f"{DEFAULT_ANALYZER!r} analyzer only, not "
                                  f"{request.bm25.analyzer!r}")
        self.wanted = analyzer(DEFAULT_ANALYZER)(request.text)

    def query(self, project: str, names: Sequence[LayerName]) -> Query | None:
        """The statement reading the terms' document frequencies (None: no lexical side)."""
        if not self.wanted:
            return None
        return (sql.SQL("SELECT term, sum(df) FROM lexicon WHERE project = %s AND "
                        "layer = ANY(%s) AND term = ANY(%s) GROUP BY term"),
                [project, [x.value for x in names], list(set(self.wanted))])

    def excluded(self, project: str, names: Sequence[LayerName]) -> Query | None:
        """The statement reading the query's terms' frequencies among what a general
        search's statistics leave out (events and memories:
        ``sediment.store.rules.counted_in_statistics``, as the file engine does), from the
        posting blocks of those kinds, read through the blocks' key as :meth:`blocks` reads
        the query's postings. Their count and length are the layers' ``uncounted_*``
        columns (migration 0078), so the cost follows the query's terms, not the number of
        events and memories."""
        if not self.wanted or not self.general:
            return None
        return (sql.SQL("SELECT term, sum(length(data) / {}) FROM posting_blocks "
                        "WHERE project = %s AND layer = ANY(%s) AND term = ANY(%s) AND "
                        "(kind LIKE {} OR kind LIKE {}) GROUP BY term"
                        ).format(sql.Literal(POSTING.itemsize),
                                 sql.Literal(MEMORY_KIND_PREFIX + "%%"),
                                 sql.Literal(META_PREFIX + "%%")),
                [project, [x.value for x in names], list(set(self.wanted))])

    def load(self, rows: Sequence[tuple[Any, ...]], df_rows: Sequence[tuple[Any, ...]],
             excluded: Sequence[tuple[Any, ...]] = ()) -> None:
        """Statistics from the searched layers' rows (the ``layer, n_docs, total_len,
        dim, uncounted_docs, uncounted_len`` of :data:`LAYER_COUNTS`) and the frequencies
        :meth:`query` read, less, for a general search, the uncounted rows and the
        frequencies :meth:`excluded` read."""
        n = sum(int(r[1]) - (int(r[4]) if self.general else 0) for r in rows)
        total = sum(int(r[2]) - (int(r[5]) if self.general else 0) for r in rows)
        if not self.wanted or n <= 0:
            return
        out = {str(t): int(d) for t, d in excluded}
        dfs = {str(t): int(d) - out.get(str(t), 0) for t, d in df_rows}
        self.stats = stats_of(self.wanted, [dfs.get(t, 0) for t in self.wanted], n, total)

    def blocks(self, project: str, names: Sequence[LayerName], kind_sql: sql.Composable,
               kind_args: list[Any]) -> Query | None:
        """The statement reading the posting blocks of the query's terms in the layers
        searched, of the kinds searched (migration 0074): a few hundred rows for a term
        held by a fifth of a million chunks, read through the blocks' key. Sent in binary,
        so each block arrives as its bytes."""
        if not self.wanted:
            return None
        return (sql.SQL("SELECT c.layer, c.term, c.data FROM posting_blocks c "
                        "WHERE c.project = %s AND c.layer = ANY(%s) AND c.term = ANY(%s) "
                        "AND {}").format(kind_sql),
                [project, [x.value for x in names], list(set(self.wanted)), *kind_args])

    def score_blocks(self, rows: Sequence[tuple[Any, ...]]) -> dict[LayerName, Scored]:
        """Every layer's BM25 scores from the blocks :meth:`blocks` read: the documents
        holding a query term, by id, scored in float32 term by term as
        ``Postings.scores`` scores them (so both stores rank alike, ties included)."""
        parts: dict[LayerName, dict[str, list[bytes]]] = {}
        for layer, term, data in rows:
            parts.setdefault(LayerName(layer), {}).setdefault(str(term), []).append(
                bytes(data))
        return {n: self._score_layer(by_term) for n, by_term in parts.items()}

    def _score_layer(self, by_term: dict[str, list[bytes]]) -> Scored:
        stats = self.stats
        if stats is None or stats.avg_len <= 0:
            return Scored.empty()
        postings = {t: np.frombuffer(b"".join(p), dtype=POSTING) for t, p in by_term.items()}
        ids = np.concatenate([p["id"] for p in postings.values()]).astype(np.int64)
        if not len(ids):
            return Scored.empty()
        lo, hi = int(ids.min()), int(ids.max())
        dense = hi - lo < max(DENSE_SPAN, 8 * len(ids))
        if dense:  # ids in a compact range (a pushed base's): sum into an array over it
            acc = np.zeros(hi - lo + 1, dtype=np.float32)
            slots = {t: p["id"].astype(np.int64) - lo for t, p in postings.items()}
            keys = np.zeros(0, dtype=np.int64)
        else:
            keys, inverse = np.unique(ids, return_inverse=True)
            acc = np.zeros(len(keys), dtype=np.float32)
            slots, start = {}, 0
            for t, p in postings.items():
                slots[t] = inverse[start:start + len(p)]
                start += len(p)
        for term, idf in zip(stats.terms, stats.idf.tolist(), strict=True):
            held = postings.get(term)
            if held is None or not len(held):
                continue
            acc[slots[term]] += term_scores(held["tf"], held["len"], idf, stats.avg_len,
                                            self.k1, self.b)
        if dense:
            at = np.flatnonzero(acc)
            return Scored(at + lo, acc[at])
        return Scored(keys, acc)


POSTING = np.dtype([("id", ">u4"), ("tf", ">i4"), ("len", ">i4")])
"""One posting in a block of ``posting_blocks`` (migration 0074's ``sediment_posting``)."""
DENSE_SPAN = 1 << 21
"""Ids spanning fewer values than this (or than eight per posting) are summed in an array
over their range; others through their sorted distinct values."""


class Scored:
    """One layer's BM25 scores: the documents holding a query term, by increasing id."""

    __slots__ = ("ids", "scores")

    def __init__(self, ids: I64, scores: F32) -> None:
        self.ids, self.scores = ids, scores

    @classmethod
    def empty(cls) -> Scored:
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))

    def top(self, c: int, hidden: I64) -> list[int]:
        """The ``c`` best ids not ``hidden``, by score, then by id."""
        ids, scores = self.ids, self.scores
        if len(hidden):
            keep = ~np.isin(ids, hidden)
            ids, scores = ids[keep], scores[keep]
        if c <= 0:
            return []
        if len(ids) > c:
            cut = scores[np.argpartition(-scores, c - 1)[:c]].min()
            at = np.flatnonzero(scores >= cut)
        else:
            at = np.arange(len(ids))
        order = np.lexsort((ids[at], -scores[at]))[:c]
        return [int(i) for i in ids[at][order]]

    def of(self, ids: I64) -> F32:
        """The scores of ``ids`` (0 for an id holding no query term)."""
        out = np.zeros(len(ids), dtype=np.float32)
        if len(self.ids):
            at = np.minimum(np.searchsorted(self.ids, ids), len(self.ids) - 1)
            found = self.ids[at] == ids
            out[found] = self.scores[at[found]]
        return out


MAX_BREADTH = 1000
"""pgvector's largest ``hnsw.ef_search``."""


def breadth(request: SearchRequest, c: int, rows: int) -> int:
    """``hnsw.ef_search`` for a query wanting ``c`` candidates from a layer of ``rows``:
    the request's ``ann_expansion``, else the file store's default breadth for a graph of
    that size (:func:`~sediment.search.ann.default_breadth`: 96 at 100,000 rows, 256 at
    1,000,000), so both backends' approximate answers are about equally complete; never
    fewer than ``c`` (the walk yields at most ``ef_search`` rows)."""
    wanted = request.ann_expansion or max(default_breadth(rows), c)
    return min(wanted, MAX_FETCH, MAX_BREADTH)


def _vector_query(store: PgStore, layer: LayerName, dim: int, q: F32, c: int, dot: bool,
                  ef: int | None, kind_sql: sql.Composable, kind_args: list[Any], *,
                  scoped: bool = True) -> Query:
    """The statement for the ``c`` nearest ids of one layer: exact (a scan ordered by
    distance; ``ef`` None) or through an HNSW index at breadth ``ef`` (which
    :func:`_set_breadth` set): the project's own (``scoped``), else the shared one."""
    op = sql.SQL("<#>" if dot else "<=>")
    base = [store.project, layer.value, *kind_args]
    if ef is None:
        return (sql.SQL("SELECT c.id FROM chunks c WHERE c.project = %s AND c.layer = %s AND {} "
                        "AND c.dim = {} ORDER BY c.embedding {} %s, c.id LIMIT %s").format(
                            kind_sql, sql.Literal(dim), op), [*base, q, c])
    # The inner query carries exactly the index's own predicate, as literals (a prepared
    # statement's generic plan can match a partial index only so), so the planner walks the
    # HNSW graph (it yields at most hnsw.ef_search rows); layer and kind filter its answer
    # afterwards, and the project too when the graph is the shared one.
    scope = sql.SQL(" AND project = {}").format(sql.Literal(store.project)) if scoped \
        else sql.SQL("")
    return (sql.SQL(
        "SELECT c.id FROM (SELECT id, project, layer, kind, embedding FROM chunks WHERE "
        "dim = {}{} ORDER BY embedding::vector({}) {} %s::vector({}) LIMIT %s) AS c "
        "WHERE c.project = %s AND c.layer = %s AND {} "
        "ORDER BY c.embedding::vector({}) {} %s::vector({}) LIMIT %s").format(
        sql.Literal(dim), scope, sql.Literal(dim), op, sql.Literal(dim), kind_sql,
        sql.Literal(dim), op, sql.Literal(dim)), [q, ef, *base, q, c])


@dataclass
class _Mark:
    """Where a layer's events were last read: its events generation and cut then, and the
    oldest transaction still running then (``pg_snapshot_xmin``, an ``xid8`` as text);
    events of that transaction or later are read again next time (migration 0078). No cut
    or horizon: read the layer whole next time."""

    gen: int
    cut: int | None
    horizon: str | None


@dataclass
class _Events:
    """A store's events as folded: what they hide, and where each layer's next read
    starts. Folds take the lock: two searches joining new events onto one layer at once
    would otherwise lose one's."""

    hidden: HiddenSets = field(default_factory=HiddenSets)
    marks: dict[LayerName, _Mark] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    versions: Iterator[int] = field(default_factory=itertools.count)


_events_seen: weakref.WeakKeyDictionary[PgStore, _Events] = weakref.WeakKeyDictionary()
_arrays: weakref.WeakKeyDictionary[PgStore, tuple[frozenset[int], I64]] = (
    weakref.WeakKeyDictionary())


def _hidden_query(store: PgStore, names: Sequence[LayerName]) -> Query:
    """The events of the layers among ``names`` whose events generation moved since this
    store last read them, each such layer with its generation and cut (one row with no
    event for a layer that has none): a layer read before under the same cut, only the
    events of transactions at or after that read's horizon (a range of the events' index),
    else all of them. So a search pays for a layer's events once per change of them, and
    after a write only for the events that are new."""
    state = _events_seen.get(store)
    marks = list(state.marks.items()) if state is not None else []
    known = [(n.value, m.cut, m.horizon) for n, m in marks
             if m.cut is not None and m.horizon is not None]
    # ``kind LIKE 'meta.%'`` is the predicate of the partial index chunks_events: without
    # it the planner cannot prove the index applies. A literal, not a parameter, so a
    # prepared statement's generic plan can prove it too (``%%``: psycopg's ``%``).
    cols = ", ".join(f"c.{x.strip()}" for x in CHUNK_COLS.split(",")[1:])
    branch = (f"SELECT t.layer, {cols}, t.events_gen, t.events_cut, t.joined, "
              "t.horizon::text, pg_snapshot_xmin(pg_current_snapshot())::text, "
              "pg_current_xact_id_if_assigned() IS NOT NULL FROM todo AS t "
              "LEFT JOIN chunks AS c ON c.project = t.project AND c.layer = t.layer "
              "AND c.kind LIKE {meta}")
    return (sql.SQL(
        "WITH known (layer, cut, horizon) AS (SELECT * FROM unnest(%(layers)s::text[], "
        "%(cuts)s::bigint[], %(horizons)s::text[]::xid8[])), "
        "todo AS (SELECT l.project, l.layer, l.events_gen, l.events_cut, k.horizon, "
        "coalesce(k.cut = l.events_cut, false) AS joined FROM layers AS l "
        "LEFT JOIN known AS k ON k.layer = l.layer WHERE l.project = %(project)s "
        "AND l.layer = ANY(%(names)s) AND l.events_gen <> ALL(%(gens)s)) "
        + branch + " WHERE NOT t.joined UNION ALL "
        + branch + " AND c.event_xid >= t.horizon WHERE t.joined"
        ).format(meta=sql.Literal(META_PREFIX + "%%")),
        {"project": store.project,
         "names": [x.value for x in names], "gens": [m.gen for _, m in marks],
         "layers": [k[0] for k in known], "cuts": [k[1] for k in known],
         "horizons": [k[2] for k in known]})


def _fold(store: PgStore, rows: Sequence[tuple[Any, ...]], names: Sequence[LayerName],
          present: Sequence[LayerName]) -> None:
    """Fold the layers' events :func:`_hidden_query` read, and forget the layers among
    ``names`` that are gone.

    A whole read replaces what a layer's events hide, unless a slower search already
    folded a newer generation. New events are joined on when the layer's cut is the one
    they were read under (no event removed since: events only add to what is hidden);
    the next read then starts at this read's horizon if it started where the last fold
    left off. A read that saw its own transaction's uncommitted events (a search inside
    a write) is folded, but the next read is whole: that transaction may roll back."""
    state = _events_seen.setdefault(store, _Events())
    fresh: dict[LayerName, tuple[tuple[Any, ...], list[Chunk]]] = {}
    for r in rows:
        _, chunks = fresh.setdefault(LayerName(r[0]), (tuple(r[8:]), []))
        if r[1] is not None:
            chunks.append(chunk_of(r))
    with state.lock:
        for name, ((gen, cut, joined, sent, horizon, own), chunks) in fresh.items():
            mark = state.marks.get(name)
            if joined:
                if mark is None or mark.cut != cut:
                    continue  # read whole since, under another cut: that fold stands
                state.hidden.fold(name, next(state.versions), chunks, onto=True)
                if sent == mark.horizon and int(horizon) >= int(sent):
                    mark = _Mark(max(int(gen), mark.gen), int(cut), str(horizon))
            elif mark is None or int(gen) > mark.gen:
                state.hidden.fold(name, next(state.versions), chunks)
                mark = _Mark(int(gen), int(cut), str(horizon))
            else:
                continue
            state.marks[name] = _Mark(-1, None, None) if own else mark
        gone = [n for n in names if n not in present]
        state.hidden.drop(gone)
        for n in gone:
            state.marks.pop(n, None)


def folded(store: PgStore, present: Sequence[LayerName]) -> HiddenSets:
    """The store's events as folded, brought up to date for the ``present`` layers by one
    statement, as a search does: what a read by id checks (``store.rules.Reader``) then
    costs only the events that changed since, not the layers' whole logs."""
    query = _hidden_query(store, present)
    with store.cursor() as cur:
        cur.execute(query[0], query[1])
        rows = cur.fetchall()
    _fold(store, rows, PRECEDENCE, present)
    return _events_seen[store].hidden


def _hidden(store: PgStore, layers: Sequence[LayerName], actor: str | None
            ) -> tuple[frozenset[int], I64]:
    """Ids a search of ``layers`` by ``actor`` leaves out (``store.rules.HiddenSets``), as
    a set and a sorted array (for the statements), from the events last folded."""
    hidden = _events_seen.setdefault(store, _Events()).hidden.answer(layers, actor)
    last = _arrays.get(store)
    if last is None or last[0] is not hidden:
        last = _arrays[store] = (hidden, np.asarray(sorted(hidden), dtype=np.int64))
    return last


def _excluding(kind_sql: sql.Composable, kind_args: list[Any], hidden: I64
               ) -> tuple[sql.Composable, list[Any]]:
    """The kind filter less the hidden ids, so that hidden chunks take no candidate slot
    (as ``LayerIndex.search_mask`` does on the layer files)."""
    if not len(hidden):
        return kind_sql, kind_args
    return (sql.SQL("{} AND NOT (c.id = ANY(%s::bigint[]))").format(kind_sql),
            [*kind_args, hidden.tolist()])


def _send(conn: psycopg.Connection[Any], query: Query | None, *, binary: bool = False
          ) -> Cursor | None:
    """``query`` queued on a cursor of its own (in a pipeline: sent with the others)."""
    if query is None:
        return None
    cur = conn.cursor()
    cur.execute(query[0], query[1], binary=binary)
    return cur


def _ids(cur: Cursor | None) -> list[int]:
    return [] if cur is None else [int(r[0]) for r in cur.fetchall()]


class Plan:
    """How a search walks each layer's vectors: per layer its dimension, whether through an
    HNSW index (and the project's own), and the walk's breadth."""

    __slots__ = ("approx", "dims", "ef", "own", "rows")

    def __init__(self, layers: dict[LayerName, tuple[int, int]], request: SearchRequest,
                 c: int, lookup: Callable[[int], str | None], own_name: Callable[[int], str]
                 ) -> None:
        self.rows = {n: r for n, (r, _) in layers.items()}
        self.dims = {n: d for n, (_, d) in layers.items()}
        walk = {n: lookup(d) if not request.exact and r >= ANN_MIN_ROWS else None
                for n, (r, d) in layers.items()}
        self.approx = {n: w is not None for n, w in walk.items()}
        self.own = {n: w == own_name(self.dims[n]) for n, w in walk.items()}
        self.ef = breadth(request, c, max([r for n, r in self.rows.items() if self.approx[n]],
                                          default=0))

    def key(self) -> tuple[Any, ...]:
        """What the statements depend on (not the exact row counts)."""
        ef = self.ef if any(self.approx.values()) else 0
        return (tuple(sorted((n.value, self.dims[n], self.approx[n], self.own[n])
                             for n in self.dims)), ef)

    def send(self, store: PgStore, conn: psycopg.Connection[Any], q: F32, c: int, dot: bool,
             kind_sql: sql.Composable, kind_args: list[Any]) -> dict[LayerName, Cursor | None]:
        return {n: _send(conn, _vector_query(store, n, self.dims[n], q, c, dot,
                                             self.ef if self.approx[n] else None, kind_sql,
                                             kind_args, scoped=self.own[n]))
                for n in self.dims}


class _Unknown(Exception):
    """A cached fact a guessed plan needs is missing."""


def _known_index(store: PgStore, dim: int, dot: bool) -> str | None:
    """:func:`_usable_index`'s answer from its cache alone (:class:`_Unknown` if none)."""
    hit = _indexes.get(store, {}).get((dim, dot))
    if hit is None or not (hit[0] == index_name(dim, dot, store.project)
                           or hit[1] > time.monotonic()):
        raise _Unknown
    return hit[0]


_layers_seen: weakref.WeakKeyDictionary[PgStore, dict[LayerName, tuple[int, int]]] = (
    weakref.WeakKeyDictionary())


def _guess(store: PgStore, names: Sequence[LayerName], request: SearchRequest, q: F32 | None,
           c: int, dot: bool) -> Plan | None:
    """The vector plan the layers' counts of the store's last search give, so the vector
    statements can go out in the first round trip (None when something is not known yet:
    the first search of a store). :func:`run` keeps it only if the layers read in that
    trip give the same plan."""
    seen = _layers_seen.get(store)
    if q is None or seen is None:
        return None
    layers = {n: seen[n] for n in names if n in seen and seen[n][0] and seen[n][1]}
    if any(d != len(q) for _, d in layers.values()):
        return None
    try:
        return Plan(layers, request, c, lambda d: _known_index(store, d, dot),
                    lambda d: index_name(d, dot, store.project))
    except _Unknown:
        return None


def run(store: PgStore, request: SearchRequest, query_vec: F32 | None, *,
        normalised: bool = False) -> SearchResult:
    """``request`` over ``store``'s project (see the module docstring).

    Two round trips, whatever the number of layers: the layers' counts, the hidden ids,
    the terms' frequencies and posting blocks, and (planned from the layers' counts of the
    store's previous search) every layer's vector candidates, pipelined; then the
    candidates' rows. When the counts read change the vector plan (the first search of a
    store, a layer come or gone), the vector statements take a trip of their own, and an
    HNSW answer that the filters leave short one more (the exact scan that replaces it)."""
    request.validate(query_vec is not None)
    t0 = time.perf_counter()
    names = request.layers if request.layers is not None else PRECEDENCE
    lex = _Lexical(request)
    kind_sql, kind_args = _kind_filter(request)
    timings: dict[str, float] = {}
    q = None
    if query_vec is not None and request.mode != "lexical":
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    c = request.candidates or default_candidates(request.mode, request.k)
    dot = normalised or request.metric == "dot"
    guess = _guess(store, names, request, q, c, dot)
    # The hidden ids as last folded: the vector statements sent before the events are read
    # leave them out, and go again if the events read change them.
    spec, spec_ids = _hidden(store, names, request.actor)
    with store.cursor() as cur:
        conn = cur.connection
        if guess is not None and any(guess.approx.values()):
            _set_breadth(cur, guess.ef)
        with conn.pipeline():
            cur.execute(LAYER_COUNTS, (store.project, [n.value for n in names]))
            events = _send(conn, _hidden_query(store, names))
            dfs = _send(conn, lex.query(store.project, names))
            left_out = _send(conn, lex.excluded(store.project, names))
            blocks = _send(conn, lex.blocks(store.project, names, kind_sql, kind_args),
                           binary=True)
            early: dict[LayerName, Cursor | None] = {}
            if guess is not None and q is not None:
                # Without a flush the server would hold the answers above (a buffer's
                # tail) until the walk below had ended.
                conn.pgconn.send_flush_request()
                early = guess.send(store, conn, q, c, dot,
                                   *_excluding(kind_sql, kind_args, spec_ids))
            # Read before the block's end, so the blocks are summed while the server
            # walks the graph.
            found = {LayerName(r[0]): r for r in cur.fetchall()}
            hidden_rows = events.fetchall() if events is not None else []
            df_rows = dfs.fetchall() if dfs is not None else []
            out_rows = left_out.fetchall() if left_out is not None else []
            block_rows = blocks.fetchall() if blocks is not None else []
            layers = [n for n in PRECEDENCE if n in found]
            _fold(store, hidden_rows, names, layers)
            hidden, hidden_arr = _hidden(store, layers, request.actor)
            lex.load([found[n] for n in layers], df_rows, out_rows)
            searched = [n for n in layers if int(found[n][1])]
            t = time.perf_counter()
            scored = lex.score_blocks(block_rows)
            top = {n: scored[n].top(c, hidden_arr) if n in scored else [] for n in searched}
            timings["bm25"] = (time.perf_counter() - t) * 1e3
    seen = _layers_seen.setdefault(store, {})
    for n in names:
        seen.pop(n, None)
    seen.update({n: (int(found[n][1]), int(found[n][3])) for n in layers})
    if len(layers) > 1:
        check_schema(store, names, request)
    if q is not None:
        for n in layers:
            if found[n][1] and found[n][3] != len(q):
                raise ValidationError(f"query vector has {len(q)} dims but layer {n.value} "
                                      f"has {found[n][3]}")
    t = time.perf_counter()
    with store.cursor() as cur:
        conn = cur.connection
        plan = Plan({n: (int(found[n][1]), int(found[n][3])) for n in searched
                     if q is not None and int(found[n][3])}, request, c,
                    lambda d: _usable_index(store, cur, d, dot),
                    lambda d: index_name(d, dot, store.project))
        vec_sql, vec_args = _excluding(kind_sql, kind_args, hidden_arr)
        same = guess is not None and guess.key() == plan.key() and (
            hidden is spec or hidden == spec)
        if same or not plan.dims:
            near = early
        else:
            if any(plan.approx.values()):
                _set_breadth(cur, plan.ef)
            assert q is not None or not plan.dims
            with conn.pipeline():
                near = {} if q is None else plan.send(store, conn, q, c, dot, vec_sql,
                                                      vec_args)
        got = {n: _ids(near[n]) for n in plan.dims}
        approx = dict(plan.approx)
        timings["candidates"] = (time.perf_counter() - t) * 1e3
        picked: dict[tuple[LayerName, int], bool] = {}
        for n in searched:
            if n in got:
                if approx[n] and len(got[n]) < min(c, int(found[n][1])):
                    assert q is not None
                    t = time.perf_counter()
                    got[n], approx[n] = _ids(_send(conn, _vector_query(
                        store, n, int(found[n][3]), q, c, dot, None, vec_sql,
                        vec_args))), False
                    timings["candidates"] += (time.perf_counter() - t) * 1e3
                for i in got[n]:
                    picked[(n, i)] = approx[n]
            for i in top[n]:
                picked.setdefault((n, i), False)
        t = time.perf_counter()
        hits = _resolve(store, cur, layers, picked, scored, q, request, normalised, hidden)
    for rerank in request.rerankers:
        hits = rerank(hits)
    timings["fusion"] = (time.perf_counter() - t) * 1e3
    timings["total"] = (time.perf_counter() - t0) * 1e3
    return SearchResult(hits[: request.k], layers, timings)


FETCH_COLS = "layer, id, kind, content, author, confidence::text, created_at_ms, sources"
"""``CHUNK_COLS`` for a binary fetch: a ``real`` read in binary is the float32 value
(0.699999988 for 0.7), its text the shortest decimal that reads back as it, which is what
the text protocol gives every other read of a chunk."""
ROW_NO, DIM, EMBEDDING = range(8, 11)
"""Positions, after ``FETCH_COLS``, of the columns :func:`_fetch` adds."""


def _fetch(store: PgStore, cur: Cursor, layers: Sequence[LayerName],
           picked: dict[tuple[LayerName, int], bool]
           ) -> tuple[list[tuple[Any, ...]], dict[int, dict[LayerName, tuple[Any, ...]]]]:
    """The picked candidates' rows (what scoring reads), and every version of their ids in
    the layers searched (what precedence reads), by one indexed query."""
    cur.execute(f"SELECT {FETCH_COLS}, row_no, dim, embedding FROM chunks "
                "WHERE project = %s AND id = ANY(%s) AND layer = ANY(%s)",
                (store.project, sorted({i for _, i in picked}), [x.value for x in layers]),
                binary=True)
    versions: dict[int, dict[LayerName, tuple[Any, ...]]] = {}
    for r in cur.fetchall():
        versions.setdefault(int(r[1]), {})[LayerName(r[0])] = r
    rows = [versions[i][n] for n, i in picked if n in versions.get(i, {})]
    return rows, versions


def _resolve(store: PgStore, cur: Cursor, layers: Sequence[LayerName],
             picked: dict[tuple[LayerName, int], bool], scored: dict[LayerName, Scored],
             q: F32 | None, request: SearchRequest, normalised: bool,
             hidden: AbstractSet[int]
             ) -> list[Hit]:
    """Score the pool by both retrievers and rank it (``search.ranking.rank``)."""
    if not picked:
        return []
    rows, versions = _fetch(store, cur, layers, picked)
    if not rows:
        return []
    layer_of = np.asarray([LayerName(r[0]).rank for r in rows], dtype=np.int64)
    ids = np.asarray([int(r[1]) for r in rows], dtype=np.int64)
    pos = np.asarray([int(r[ROW_NO]) for r in rows], dtype=np.int64)
    if q is not None:
        mat = np.stack([as_vector(r[EMBEDDING], len(q)) if r[DIM] else
                        np.zeros(len(q), np.float32) for r in rows])
        vec = scores_of(mat, q, request.metric, normalised)
    else:
        vec = np.full(len(rows), np.nan, dtype=np.float32)
    lexs = np.zeros(len(rows), dtype=np.float32)
    for n, got in scored.items():
        mine = layer_of == n.rank
        lexs[mine] = got.of(ids[mine])
    approximate = np.asarray([picked.get((LayerName(r[0]), int(r[1])), False) for r in rows],
                             dtype=np.bool_)
    return rank(Candidates(ids, layer_of, pos, vec, lexs, approximate),
                _Rows(versions, q, request.metric, normalised), request, hidden,
                has_vector=q is not None)


class _Rows:
    """:class:`~sediment.search.ranking.Versions` over the rows :func:`_fetch` read."""

    __slots__ = ("metric", "normalised", "q", "versions")

    def __init__(self, versions: dict[int, dict[LayerName, tuple[Any, ...]]], q: F32 | None,
                 metric: Metric, normalised: bool) -> None:
        self.versions, self.q, self.metric, self.normalised = versions, q, metric, normalised

    def of(self, ids: I64) -> Iterator[list[tuple[LayerName, tuple[Any, ...]]]]:
        for cid in ids.tolist():
            got = self.versions.get(cid, {})
            yield [(n, got[n]) for n in PRECEDENCE if n in got]

    def kind(self, layer: LayerName, version: tuple[Any, ...]) -> str:
        return str(version[2])  # FETCH_COLS: layer, id, kind, ...

    def chunk(self, layer: LayerName, version: tuple[Any, ...]) -> Chunk:
        return chunk_of(version)

    def vector_score(self, layer: LayerName, version: tuple[Any, ...]) -> float:
        assert self.q is not None
        v = as_vector(version[EMBEDDING], int(version[DIM]))
        return float(scores_of(v[None, :], self.q, self.metric, self.normalised)[0])

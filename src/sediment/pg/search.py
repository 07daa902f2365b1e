"""Hybrid search inside PostgreSQL, ranked as the file engine ranks (search/engine.py).

Per layer, each retriever proposes its best ``c`` candidates in SQL: the vector side by
pgvector, exactly (a scan ordered by distance) or through an HNSW index when the layer is
large enough to have one (``ensure_vector_index``), falling back to exact when the index's
answer, filtered after the index walk, comes up short; the lexical side by Okapi BM25
computed in SQL from each chunk's analysed term counts, with document frequencies,
document count and average length summed over the layers searched (the ``lexicon`` and
``layers`` tables). Then, as in the engine, every candidate is scored by both retrievers
(here in numpy, in float32, from the rows fetched), fused by the request's fusion,
grouped by id with the highest layer's version winning, hidden (superseded, forgotten)
ids dropped, filtered on the version shown, and re-ranked by the request's rerankers.

The lexical side uses the default (``english``) analyzer, the one the rows are indexed
with; asking for another is an error naming it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from psycopg import sql

from sediment.errors import ValidationError
from sediment.pg.store import CHUNK_COLS, as_vector, chunk_of
from sediment.search.analysis import DEFAULT_ANALYZER, analyzer
from sediment.search.ann import ANN_MIN_ROWS, MAX_FETCH
from sediment.search.engine import SearchRequest, SearchResult, check_schema
from sediment.search.fusion import Pool
from sediment.search.hits import HiddenVersion, Hit
from sediment.store import PRECEDENCE, LayerName
from sediment.store.events import (
    FORGET,
    MEMORY_KIND_PREFIX,
    META_PREFIX,
    SUPERSEDE,
    hidden_ids,
    is_meta_kind,
    iter_events,
)

if TYPE_CHECKING:
    from sediment.pg.store import Cursor, PgStore

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]


def index_name(dim: int, dot: bool) -> str:
    return f"chunks_hnsw_{dim}_{'ip' if dot else 'cos'}"


def ensure_vector_index(store: PgStore, dim: int, *, dot: bool = True) -> str:
    """Create the HNSW index for ``dim``-dimension vectors (inner product for unit-length
    rows, else cosine) if it is missing; building it over many rows takes minutes."""
    name = index_name(dim, dot)
    ops = "vector_ip_ops" if dot else "vector_cosine_ops"
    with store.cursor() as cur:
        cur.execute("SET statement_timeout = 0")
        try:
            cur.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON chunks USING hnsw "
                                "((embedding::vector({})) {}) WHERE dim = {}").format(
                sql.Identifier(name), sql.Literal(dim), sql.SQL(ops), sql.Literal(dim)))
        finally:
            cur.execute(sql.SQL("SET statement_timeout = {}").format(
                sql.Literal(store.statement_timeout_ms)))
    return name


def _has_index(cur: Cursor, name: str) -> bool:
    cur.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", (name,))
    return cur.fetchone() is not None


def _kind_filter(request: SearchRequest) -> tuple[sql.Composable, list[Any]]:
    if request.kinds:
        return sql.SQL("c.kind = ANY(%s)"), [list(request.kinds)]
    if request.include_meta:
        return sql.SQL("true"), []
    return (sql.SQL("c.kind NOT LIKE %s AND c.kind NOT LIKE %s"),
            [META_PREFIX + "%", MEMORY_KIND_PREFIX + "%"])


def _default_candidates(request: SearchRequest) -> int:
    return max(request.k * 5, 50) if request.mode == "hybrid" else max(request.k * 2, 20)


class _Lexical:
    """The query's BM25 statistics over the layers searched."""

    def __init__(self, cur: Cursor, project: str, layers: Sequence[LayerName],
                 rows: Sequence[tuple[Any, ...]], request: SearchRequest) -> None:
        self.k1, self.b = request.bm25.k1, request.bm25.b
        self.terms: list[str] = []
        self.idf = np.zeros(0, dtype=np.float32)
        self.avg_len = 0.0
        if request.mode == "vector" or not request.text:
            return
        if request.bm25.analyzer != DEFAULT_ANALYZER:
            raise ValidationError(f"the PostgreSQL store indexes text with the "
                                  f"{DEFAULT_ANALYZER!r} analyzer only, not "
                                  f"{request.bm25.analyzer!r}")
        terms = analyzer(DEFAULT_ANALYZER)(request.text)
        n = sum(int(r[1]) for r in rows)
        total = sum(int(r[2]) for r in rows)
        if not terms or not n:
            return
        cur.execute("SELECT term, sum(df) FROM lexicon WHERE project = %s AND layer = ANY(%s) "
                    "AND term = ANY(%s) GROUP BY term",
                    (project, [x.value for x in layers], list(set(terms))))
        dfs = {str(t): int(d) for t, d in cur.fetchall()}
        df = np.asarray([dfs.get(t, 0) for t in terms], dtype=np.float64)
        self.terms = terms
        self.idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
        self.avg_len = total / n

    def scores(self, tfs: Sequence[dict[str, int]], lengths: Sequence[int]) -> F32:
        """BM25 of the given documents, in float32 as ``Postings.scores`` computes it."""
        out = np.zeros(len(tfs), dtype=np.float32)
        if not self.terms or self.avg_len <= 0:
            return out
        doc_len = np.asarray(lengths, dtype=np.float32)
        norm = np.float32(self.k1) * (np.float32(1.0 - self.b)
                                      + np.float32(self.b / self.avg_len) * doc_len)
        for term, idf in zip(self.terms, self.idf.tolist(), strict=True):
            tf = np.asarray([d.get(term, 0) for d in tfs], dtype=np.float32)
            has = tf > 0
            out[has] += (np.float32(idf) * tf[has] * np.float32(self.k1 + 1.0)
                         / (tf[has] + norm[has]))
        return out

    def top(self, cur: Cursor, project: str, layer: LayerName, c: int,
            kind_sql: sql.Composable, kind_args: list[Any]) -> list[int]:
        """The ``c`` best ids of one layer by BM25 (computed in SQL)."""
        if not self.terms:
            return []
        query = sql.SQL(
            "SELECT c.id FROM chunks c, LATERAL (SELECT sum(q.idf * t.tf * %s / (t.tf + %s * "
            "(%s + %s * c.lex_len))) AS s FROM unnest(%s::text[], %s::float8[]) AS q(term, idf),"
            " LATERAL (SELECT (c.lex_tf ->> q.term)::float8 AS tf) AS t WHERE t.tf IS NOT NULL"
            ") AS x WHERE c.project = %s AND c.layer = %s AND c.lex_tf ?| %s AND {} "
            "ORDER BY x.s DESC, c.id LIMIT %s").format(kind_sql)
        cur.execute(query, [self.k1 + 1.0, self.k1, 1.0 - self.b, self.b / self.avg_len,
                            self.terms, [float(x) for x in self.idf], project, layer.value,
                            sorted(set(self.terms)), *kind_args, c])
        return [int(r[0]) for r in cur.fetchall()]


def _vector_top(store: PgStore, cur: Cursor, layer: LayerName, n_docs: int, dim: int,
                q: F32, c: int, dot: bool, request: SearchRequest,
                kind_sql: sql.Composable, kind_args: list[Any]) -> tuple[list[int], bool]:
    """The ``c`` nearest ids of one layer, and whether an HNSW index proposed them."""
    op = sql.SQL("<#>" if dot else "<=>")
    base = [store.project, layer.value, *kind_args]
    if not request.exact and n_docs >= ANN_MIN_ROWS and _has_index(cur, index_name(dim, dot)):
        ef = request.ann_expansion or min(max(c, 40), MAX_FETCH, 1000)
        # The inner query carries only the index's own predicate, so the planner walks
        # the HNSW graph; project, layer and kind filter its answer afterwards.
        query = sql.SQL(
            "SELECT c.id FROM (SELECT id, project, layer, kind, embedding FROM chunks WHERE "
            "dim = {} ORDER BY embedding::vector({}) {} %s::vector({}) LIMIT %s) AS c "
            "WHERE c.project = %s AND c.layer = %s AND {} "
            "ORDER BY c.embedding::vector({}) {} %s::vector({}) LIMIT %s").format(
            sql.Literal(dim), sql.Literal(dim), op, sql.Literal(dim), kind_sql,
            sql.Literal(dim), op, sql.Literal(dim))
        conn = cur.connection
        with conn.transaction(), conn.cursor() as inner:
            inner.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef)))
            inner.execute(query, [q, ef, *base, q, c])
            got = [int(r[0]) for r in inner.fetchall()]
        if len(got) >= min(c, n_docs):
            return got, True
    query = sql.SQL(
        "SELECT c.id FROM chunks c WHERE c.project = %s AND c.layer = %s AND {} AND "
        "c.dim = {} ORDER BY c.embedding {} %s, c.id LIMIT %s").format(
        kind_sql, sql.Literal(dim), op)
    cur.execute(query, [*base, q, c])
    return [int(r[0]) for r in cur.fetchall()], False


def _vector_scores(vectors: F32, q: F32, metric: str, normalised: bool) -> F32:
    scores: F32 = (vectors @ q).astype(np.float32)
    if metric == "cosine" and not normalised:
        norms = np.linalg.norm(vectors, axis=1)
        qn = float(np.linalg.norm(q)) or 1.0
        with np.errstate(over="ignore", invalid="ignore"):
            scores = (scores / (np.maximum(norms, 1e-12) * qn)).astype(np.float32)
    return scores


def _ranks(score: F32, valid: npt.NDArray[np.bool_], tiebreak: Sequence[I64]) -> I64:
    ranks = np.zeros(len(score), dtype=np.int64)
    idx = np.flatnonzero(valid)
    if len(idx):
        keys = [t[idx] for t in reversed(tiebreak)] + [-score[idx]]
        order = idx[np.lexsort(keys)]
        ranks[order] = np.arange(1, len(order) + 1)
    return ranks


def _hidden(cur: Cursor, project: str, layers: Sequence[LayerName]) -> set[int]:
    cur.execute(f"SELECT {CHUNK_COLS} FROM chunks WHERE project = %s AND layer = ANY(%s) "
                "AND kind = ANY(%s)", (project, [x.value for x in layers], [SUPERSEDE, FORGET]))
    return hidden_ids(iter_events((LayerName(r[0]), chunk_of(r)) for r in cur.fetchall()))


def run(store: PgStore, request: SearchRequest, query_vec: F32 | None, *,
        normalised: bool = False) -> SearchResult:
    """``request`` over ``store``'s project (see the module docstring)."""
    request.validate(query_vec is not None)
    t0 = time.perf_counter()
    names = request.layers if request.layers is not None else PRECEDENCE
    with store.cursor() as cur:
        cur.execute("SELECT layer, n_docs, total_len, dim FROM layers WHERE project = %s AND "
                    "layer = ANY(%s)", (store.project, [n.value for n in names]))
        found = {LayerName(r[0]): r for r in cur.fetchall()}
    layers = [n for n in PRECEDENCE if n in found]
    if len(layers) > 1:
        check_schema(store, names, request)
    q = None
    if query_vec is not None and request.mode != "lexical":
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        for n in layers:
            if found[n][1] and found[n][3] != len(q):
                raise ValidationError(f"query vector has {len(q)} dims but layer {n.value} "
                                      f"has {found[n][3]}")
    c = request.candidates or _default_candidates(request)
    dot = normalised or request.metric == "dot"
    kind_sql, kind_args = _kind_filter(request)
    timings: dict[str, float] = {}
    with store.cursor() as cur:
        lex = _Lexical(cur, store.project, layers, [found[n] for n in layers], request)
        picked: dict[tuple[LayerName, int], bool] = {}
        for n in layers:
            n_docs, dim = int(found[n][1]), int(found[n][3])
            if not n_docs:
                continue
            if q is not None and dim:
                t = time.perf_counter()
                ids, approx = _vector_top(store, cur, n, n_docs, dim, q, c, dot, request,
                                          kind_sql, kind_args)
                for i in ids:
                    picked[(n, i)] = approx
                timings["vector"] = timings.get("vector", 0.0) + (time.perf_counter() - t) * 1e3
            t = time.perf_counter()
            for i in lex.top(cur, store.project, n, c, kind_sql, kind_args):
                picked.setdefault((n, i), False)
            timings["bm25"] = timings.get("bm25", 0.0) + (time.perf_counter() - t) * 1e3
        t = time.perf_counter()
        hits = _resolve(store, cur, layers, picked, lex, q, request, normalised)
    for rerank in request.rerankers:
        hits = rerank(hits)
    timings["fusion"] = (time.perf_counter() - t) * 1e3
    timings["total"] = (time.perf_counter() - t0) * 1e3
    return SearchResult(hits[: request.k], layers, timings)


def _resolve(store: PgStore, cur: Cursor, layers: Sequence[LayerName],
             picked: dict[tuple[LayerName, int], bool], lex: _Lexical, q: F32 | None,
             request: SearchRequest, normalised: bool) -> list[Hit]:
    """Score the pool by both retrievers, fuse, and resolve precedence (engine semantics)."""
    if not picked:
        return []
    keys = list(picked)
    cur.execute("SELECT c.layer, c.id, c.row_no, c.embedding, c.dim, c.lex_tf, c.lex_len "
                "FROM chunks c JOIN unnest(%s::text[], %s::bigint[]) AS k(layer, id) "
                "ON c.layer = k.layer AND c.id = k.id WHERE c.project = %s",
                ([k[0].value for k in keys], [k[1] for k in keys], store.project), binary=True)
    rows = cur.fetchall()
    layer_of = np.asarray([LayerName(r[0]).rank for r in rows], dtype=np.int64)
    ids = np.asarray([int(r[1]) for r in rows], dtype=np.int64)
    pos = np.asarray([int(r[2]) for r in rows], dtype=np.int64)
    if q is not None:
        mat = np.stack([as_vector(r[3], len(q)) if r[4] else np.zeros(len(q), np.float32)
                        for r in rows])
        vec = _vector_scores(mat, q, request.metric, normalised)
    else:
        vec = np.full(len(rows), np.nan, dtype=np.float32)
    lexs = lex.scores([r[5] or {} for r in rows], [int(r[6]) for r in rows])
    tie = [-layer_of, ids, pos]
    none = np.zeros(len(rows), dtype=np.int64)
    vrank = _ranks(vec, np.isfinite(vec), tie) if q is not None else none
    lrank = _ranks(lexs, lexs > 0, tie) if request.mode != "vector" else none
    if request.mode == "lexical":
        fused = lexs
    elif request.mode == "vector":
        fused = np.where(np.isnan(vec), -np.inf, vec).astype(np.float32)
    else:
        fused = request.fusion.combine(Pool(vec, lexs, vrank, lrank))
    order = np.lexsort((ids, -layer_of, -fused))
    _, first = np.unique(ids[order], return_index=True)
    best = order[np.sort(first)]
    if request.mode == "lexical":
        best = best[lexs[best] > 0]
    hidden = _hidden(cur, store.project, layers)
    best_ids = [int(ids[b]) for b in best if int(ids[b]) not in hidden]
    cur.execute(f"SELECT {CHUNK_COLS} FROM chunks WHERE project = %s AND id = ANY(%s) AND "
                "layer = ANY(%s)", (store.project, best_ids, [x.value for x in layers]))
    versions: dict[int, dict[LayerName, tuple[Any, ...]]] = {}
    for r in cur.fetchall():
        versions.setdefault(int(r[1]), {})[LayerName(r[0])] = r
    hits: list[Hit] = []
    for b in best.tolist():
        cid = int(ids[b])
        if cid in hidden or cid not in versions:
            continue
        found = [(n, versions[cid][n]) for n in PRECEDENCE if n in versions[cid]]
        top_name, top_row = found[0]
        top = chunk_of(top_row)
        if request.kinds:
            if top.kind not in request.kinds:
                continue
        elif not request.include_meta and is_meta_kind(top.kind):
            continue
        shadowed = []
        for name, r in found[1:]:
            lower = chunk_of(r)
            shadowed.append(HiddenVersion(name, lower,
                                          (lower.content, lower.kind) != (top.content, top.kind)))
        matched = LayerName(rows[b][0])
        v, lx = float(vec[b]), float(lexs[b])
        hit = Hit(layer=top_name, chunk=top, score=float(fused[b]),
                  vector_score=v if math.isfinite(v) else None,
                  vector_rank=int(vrank[b]) or None,
                  lexical_score=lx if lx > 0 else None, lexical_rank=int(lrank[b]) or None,
                  matched_layer=matched, hidden=shadowed,
                  approximate=picked.get((matched, cid), False))
        if top_name != matched and q is not None:
            tv = store.vector(top_name, cid)
            hit.vector_score = float(_vector_scores(tv[None, :], q, request.metric,
                                                    normalised)[0])
        hits.append(hit)
        if len(hits) >= request.k and not request.rerankers:
            break
    return hits

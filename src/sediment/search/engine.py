"""Hybrid search over a layer set: vector + BM25 -> fusion -> filters -> precedence -> top k.

Layers searched together must share a schema (RFC 8.3): dimensions, element type and
embedding profile. A lexical search may opt out (``mixed_schemas=True``), since BM25 reads
no vectors; a vector or hybrid search never can. BM25 statistics (document frequencies,
document count, average length) are summed over the layers searched together, so the same
text scores the same in any of them (``bm25.query_stats``).

Per layer, each retriever proposes its best candidates: the vector side by an exact scan of
the mapped matrix, or, for a layer of at least ``ann.ANN_MIN_ROWS`` rows with a matching
approximate index, by that index (over-fetching when a kind filter applies, and scanning
exactly when too few candidates pass); the lexical side by BM25. Every candidate is then
scored by *both* retrievers (exactly), so fusion sees complete evidence. Candidates from
all layers go to the ranking core (``ranking.rank``, which the PostgreSQL search calls
too): ranked together, fused, and grouped by chunk id; the version in the highest
layer wins (local > user > delta > base, RFC 6.2) and the versions it hides travel with the
hit; hidden versions whose content differs are conflicts (RFC 12). A logical chunk ranks by
its best-matching version, so an override that rewords a base chunk is still found by the
words of the chunk it overrides.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from sediment.errors import SchemaMismatchError, ValidationError
from sediment.format import Chunk, LayerFile
from sediment.format.arrays import distinct
from sediment.search import ann
from sediment.search.analysis import analyzer
from sediment.search.bm25 import QueryStats, query_stats
from sediment.search.fusion import ConvexFusion, Fusion, Pool
from sediment.search.hits import ChunkAt, Hit, Reranker
from sediment.search.layer_index import I64, LayerIndex, Mask, layer_index
from sediment.search.params import BM25Params
from sediment.search.ranking import Candidates, default_candidates, rank, ranks
from sediment.search.vector import F32, Metric, scores_of, top_k
from sediment.store import PRECEDENCE, LayerName, LayerSet, LayerStore, OpenLayer
from sediment.store.rules import counted_in_statistics

Mode = Literal["hybrid", "vector", "lexical"]
MAX_K = 1000
ANN_OVERFETCH = 1.5
"""With a kind filter, ask the approximate index for c / (fraction allowed) x this many."""


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search. ``exact`` forces exact vector scans even where an approximate index
    exists; ``candidates`` is how many chunks each retriever proposes per layer (default
    max(5k, 50)); ``bm25`` chooses the analyzer and constants of the lexical side;
    ``ann_expansion`` is how wide the approximate index searches (its graph walk; None: the
    index's default), trading time for recall; giving it also opens the index at once
    rather than after the exact scans that pay for opening it (``ann.index``).
    ``mixed_schemas`` lets a lexical search read layers whose vectors do not share a schema
    (RFC 8.3 makes that an error by default: such layers were not built to be searched
    together)."""

    text: str | None = None
    k: int = 10
    kinds: tuple[str, ...] | None = None
    layers: tuple[LayerName, ...] | None = None
    include_meta: bool = False
    mode: Mode = "hybrid"
    metric: Metric = "cosine"
    fusion: Fusion = field(default_factory=ConvexFusion)
    candidates: int | None = None
    rerankers: tuple[Reranker, ...] = ()
    bm25: BM25Params = field(default_factory=BM25Params)
    exact: bool = False
    ann_expansion: int | None = None
    mixed_schemas: bool = False
    actor: str | None = None
    """Who searches: local-layer chunks other actors wrote are left out
    (``sediment.store.rules``); None reads as the machine's owner (trusted commands)."""

    def validate(self, has_vector: bool) -> None:
        """Assertions for what adapters validate (``sediment.ops.requests``): a failure is a
        bug in the caller. ``ann_expansion`` is a library-only knob (benchmarks), checked
        here, its one place."""
        assert not isinstance(self.k, bool) and isinstance(self.k, int) and 1 <= self.k <= MAX_K
        assert self.mode in ("hybrid", "vector", "lexical")
        assert self.metric in ("cosine", "dot")
        assert self.mode == "vector" or bool(self.text and self.text.strip())
        assert self.mode == "lexical" or has_vector
        if self.ann_expansion is not None and (
                isinstance(self.ann_expansion, bool) or not isinstance(self.ann_expansion, int)
                or not 1 <= self.ann_expansion <= ann.MAX_FETCH):
            raise ValidationError(f"ann_expansion must be an integer from 1 to "
                                  f"{ann.MAX_FETCH}, got {self.ann_expansion!r}")
        if self.mixed_schemas and self.mode != "lexical":
            raise ValidationError("mixed_schemas applies to lexical searches only: vectors "
                                  "of different schemas cannot be compared")
        analyzer(self.bm25.analyzer)


@dataclass(slots=True)
class SearchResult:
    hits: list[Hit]
    layers: list[LayerName]
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class _Part:
    """One layer's candidates: chunk-table positions and both scores of each."""

    layer: LayerName
    pos: I64
    vec: F32
    lex: F32
    approximate: bool


def _ann_candidates(idx: LayerIndex, q: F32, c: int, mask: Mask | None,
                    request: SearchRequest, normalised: bool) -> I64 | None:
    """Positions of the ``c`` best allowed chunks by the approximate index, or None when
    the layer has no usable index or too few candidates pass the filter."""
    if request.metric == "dot" and not normalised:
        return None
    index = idx.ann_index(now=request.ann_expansion is not None)  # asked for by breadth
    if index is None:
        return None
    n = idx.file.chunk_count
    allowed = n if mask is None else int(mask.sum())
    if allowed == 0:
        return np.zeros(0, dtype=np.int64)
    want = min(c, allowed)
    fetch = want if mask is None else int(want * ANN_OVERFETCH * n / allowed) + 1
    fetch = max(fetch, min(ann.MIN_FETCH, n))
    if fetch > ann.MAX_FETCH:
        return None
    rows = index.search(q, fetch, request.ann_expansion)
    if index.rows < idx.file.embedding_info.rows:  # appended since the index was built
        tail = idx.tail_rows(q, index.rows, fetch, request.metric, normalised)
        rows = np.concatenate([rows, tail])
    pos = idx.positions_of_rows(rows)
    if not idx.identity_rows():
        pos = pos[pos >= 0]
    if mask is not None:
        pos = pos[mask[pos]]
    if len(pos) < want:
        return None
    return pos


def _layer_part(layer: OpenLayer, request: SearchRequest, q: F32 | None,
                stats: QueryStats | None, c: int, normalised: bool,
                hidden: AbstractSet[int], timings: dict[str, float]) -> _Part | None:
    f = layer.file
    if f.chunk_count == 0:
        return None
    idx = layer_index(f)
    mask = idx.search_mask(request.kinds, request.include_meta, hidden)
    vec_all: F32 | None = None
    lex_all: F32 | None = None
    empty = np.zeros(0, dtype=np.int64)
    vpos, vval, lpos = empty, np.zeros(0, dtype=np.float32), empty
    approximate = False
    if q is not None:
        t = time.perf_counter()
        got = None if request.exact else _ann_candidates(idx, q, c, mask, request, normalised)
        if got is None:
            vec_all = idx.vector_scores(q, request.metric, normalised)
            masked = vec_all if mask is None else np.where(mask, vec_all, -np.inf)
            vpos = top_k(masked.astype(np.float32, copy=False), c)
            vval = vec_all[vpos]
        else:
            approximate = True
            scores = idx.score_positions(got, q, request.metric, normalised)
            best = top_k(scores, c)
            vpos, vval = got[best], scores[best]
        _add(timings, "vector", t)
    if stats is not None:
        t = time.perf_counter()
        p = request.bm25
        lex_all = idx.postings(p.analyzer).scores(stats, p.k1, p.b)
        ok = lex_all > 0 if mask is None else (lex_all > 0) & mask
        lpos = top_k(np.where(ok, lex_all, -np.inf).astype(np.float32), c)
        _add(timings, "bm25", t)
    if len(lpos) == 0:  # the vector side alone (or nothing)
        pos, vec = vpos, vval
    elif q is None:
        pos, vec = lpos, np.full(len(lpos), np.nan, dtype=np.float32)
    else:
        pos = distinct(np.concatenate([vpos, lpos]).astype(np.int64))
        vec = (vec_all[pos] if vec_all is not None
               else idx.score_positions(pos, q, request.metric, normalised))
    if len(pos) == 0:
        return None
    lex = lex_all[pos] if lex_all is not None else np.zeros(len(pos), dtype=np.float32)
    return _Part(layer.name, pos, vec.astype(np.float32, copy=False),
                 lex.astype(np.float32, copy=False), approximate)


def _add(timings: dict[str, float], key: str, since: float) -> None:
    timings[key] = timings.get(key, 0.0) + (time.perf_counter() - since) * 1e3


def check_schema(store: LayerStore, names: Sequence[LayerName],
                 request: SearchRequest) -> None:
    """The layers searched together share a schema (RFC 8.3), or the request is lexical
    and allows mixed ones; every backend's search applies this."""
    if request.mixed_schemas:
        return
    try:
        store.schema(names)
    except SchemaMismatchError as exc:
        if request.mode != "lexical":
            raise
        raise SchemaMismatchError(
            f"{exc}; to search them lexically anyway, pass mixed_schemas=True "
            "(`sediment search --mode lexical --allow-mixed-schemas`)") from exc


def _lexical_stats(layers: Sequence[OpenLayer], request: SearchRequest,
                   timings: dict[str, float]) -> QueryStats | None:
    """The query's BM25 statistics over every layer searched (None: no lexical side)."""
    if request.mode == "vector" or not request.text:
        return None
    terms = analyzer(request.bm25.analyzer)(request.text)
    if not terms:
        return None
    t = time.perf_counter()
    name = request.bm25.analyzer
    present = [layer for layer in layers if layer.file.chunk_count]
    general = not request.kinds or all(counted_in_statistics(k) for k in request.kinds)
    excluded = [x for layer in present if (x := layer_index(layer.file).excluded(name))
                ] if general else []
    stats = query_stats([layer_index(layer.file).postings(name) for layer in present], terms,
                        excluded)
    _add(timings, "bm25", t)
    return stats


def search(layerset: LayerSet, request: SearchRequest,
           query_vec: npt.NDArray[np.float32] | None = None,
           *, normalised: bool = False, shortcuts: bool = True) -> SearchResult:
    """Run ``request`` over ``layerset``; ``normalised`` says stored rows are unit length.

    ``shortcuts=False`` ranks through the general path only, never the single-layer and
    approximate-only shortcuts: the results must not change (a property test holds the
    shortcuts to it); only the time does."""
    request.validate(query_vec is not None)
    t0 = time.perf_counter()
    names = request.layers if request.layers is not None else PRECEDENCE
    layers = layerset.layers(names)
    if len(layers) > 1:  # one layer always agrees with itself
        check_schema(layerset, names, request)
    q = None
    if query_vec is not None and request.mode != "lexical":
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        for layer in layers:
            if layer.file.chunk_count and layer.file.dim != len(q):
                raise ValidationError(f"query vector has {len(q)} dims but layer "
                                      f"{layer.name.value} has {layer.file.dim}")
    c = request.candidates or default_candidates(request.mode, request.k)
    timings: dict[str, float] = {}
    stats = _lexical_stats(layers, request, timings)
    hidden = layerset.hidden(layers, request.actor)
    hits = None
    if (shortcuts and request.mode == "vector" and q is not None and len(layers) == 1
            and not request.exact):
        t = time.perf_counter()
        hits = _approximate_hits(layers[0], request, q, c, normalised, hidden)
        _add(timings, "vector", t)
        if hits is None:  # no usable index: do not ask it again below
            request = dataclasses.replace(request, exact=True)
    if hits is None:
        parts = [p for layer in layers
                 if (p := _layer_part(layer, request, q, stats, c, normalised, hidden,
                                      timings))]
        t = time.perf_counter()
        hits = _fuse_and_resolve(layers, parts, request, q, normalised, hidden, shortcuts)
    else:
        t = time.perf_counter()
    for rerank in request.rerankers:
        hits = rerank(hits)
    _add(timings, "fusion", t)
    timings["total"] = (time.perf_counter() - t0) * 1e3
    return SearchResult(hits[: request.k], [layer.name for layer in layers], timings)


def _approximate_hits(layer: OpenLayer, request: SearchRequest, q: F32, c: int,
                      normalised: bool, hidden: AbstractSet[int]) -> list[Hit] | None:
    """A vector-only search of one layer through its approximate index, or None when the
    layer has no usable index (or the filter leaves too few candidates) and the general
    path must run.

    The same result the general path gives, by a shorter road: nothing can shadow a
    candidate, so after the index proposes and the matrix re-scores, a few dozen
    candidates are ordered by one lexsort and the hits carry their chunk undecoded
    (:class:`ChunkAt`). Each numpy call costs microseconds once the index search has
    pushed numpy out of the CPU caches, and the general path's pool arithmetic makes
    dozens of them; decoding a page of chunks cost more than the rest together.
    """
    f = layer.file
    if f.chunk_count == 0:
        return []
    idx = layer_index(f)
    got = _ann_candidates(idx, q, c, idx.search_mask(request.kinds, request.include_meta,
                                                     hidden), request, normalised)
    if got is None:
        return None
    scores = idx.score_positions(got, q, request.metric, normalised)
    if not np.isfinite(scores).all():
        return None
    ids = f.ids[got]
    order = np.lexsort((got, ids, -scores))[:c]
    want = len(order) if request.rerankers else request.k
    name = layer.name
    hits: list[Hit] = []
    for place, (score, cid, pos) in enumerate(zip(scores[order].tolist(), ids[order].tolist(),
                                                 got[order].tolist(), strict=True), 1):
        if cid in hidden:
            continue
        hits.append(Hit(layer=name, chunk=ChunkAt(f, pos, cid), score=score,
                        vector_score=score, vector_rank=place, matched_layer=name,
                        approximate=True))
        if len(hits) == want:
            break
    return hits


def _fuse_and_resolve(layers: list[OpenLayer], parts: list[_Part], request: SearchRequest,
                      q: F32 | None, normalised: bool, hidden: AbstractSet[int],
                      shortcuts: bool = True) -> list[Hit]:
    """The parts' candidates as one pool, ranked by ``ranking.rank``."""
    if not parts:
        return []
    if len(layers) == 1 and shortcuts:
        return _one_file_hits(parts[0], layers[0].file, request, hidden)
    files = {layer.name: layer.file for layer in layers}
    if len(parts) == 1 and shortcuts:
        p0 = parts[0]
        pos, vec, lex = p0.pos, p0.vec, p0.lex
        layer_rank = np.full(len(pos), p0.layer.rank, dtype=np.int64)
        approximate = np.full(len(pos), p0.approximate)
        ids = files[p0.layer].ids[pos].astype(np.int64)
    else:
        which = np.concatenate([np.full(len(p.pos), n, dtype=np.int64)
                                for n, p in enumerate(parts)])
        pos = np.concatenate([p.pos for p in parts])
        vec = np.concatenate([p.vec for p in parts])
        lex = np.concatenate([p.lex for p in parts])
        layer_rank = np.asarray([p.layer.rank for p in parts], dtype=np.int64)[which]
        approximate = np.asarray([p.approximate for p in parts])[which]
        ids = np.concatenate([files[p.layer].ids[p.pos] for p in parts]).astype(np.int64)
    return rank(Candidates(ids, layer_rank, pos, vec, lex, approximate),
                _FileVersions(files, q, request.metric, normalised), request, hidden,
                has_vector=q is not None)


class _FileVersions:
    """:class:`~sediment.search.ranking.Versions` over the layer files searched: a version
    is a position in its file's chunk table, found through the file's id index."""

    __slots__ = ("files", "metric", "normalised", "q")

    def __init__(self, files: dict[LayerName, LayerFile], q: F32 | None, metric: Metric,
                 normalised: bool) -> None:
        self.files, self.q, self.metric, self.normalised = files, q, metric, normalised

    def of(self, ids: I64) -> Iterator[list[tuple[LayerName, int]]]:
        keys = ids.astype(np.uint32)
        where = [(name, layer_index(self.files[name]).positions(keys).tolist())
                 for name in PRECEDENCE if name in self.files]
        for n in range(len(ids)):
            yield [(name, w[n]) for name, w in where if w[n] >= 0]

    def kind(self, layer: LayerName, version: int) -> str:
        return self.files[layer].kind_at(version)

    def chunk(self, layer: LayerName, version: int) -> Chunk:
        return self.files[layer].chunk_at(version)

    def vector_score(self, layer: LayerName, version: int) -> float:
        assert self.q is not None
        v = self.files[layer].vector(version)
        return float(scores_of(v[None, :], self.q, self.metric, self.normalised)[0])


def _one_file_hits(part: _Part, f: LayerFile, request: SearchRequest,
                   hidden: AbstractSet[int]) -> list[Hit]:
    """``ranking.rank`` for a search of a single layer: no other version can
    shadow a candidate, and ``_layer_part`` has applied the kind filter already, so only
    hidden ids are dropped and only the hits returned are decoded (in one batch). A
    vector-only or lexical-only search ranks by its one score without the pool's rank
    arithmetic; this is most of what a single-layer search costs beyond the index."""
    pos, vec, lex = part.pos, part.vec, part.lex
    ids = f.ids[pos]
    if request.mode == "hybrid":
        tie = [ids.astype(np.int64), pos]
        vrank = ranks(vec, np.isfinite(vec), tie)
        lrank = ranks(lex, lex > 0, tie)
        fused = request.fusion.combine(Pool(vec, lex, vrank, lrank))
        order = np.lexsort((ids, -fused))
    else:
        lexical = request.mode == "lexical"
        fused = lex if lexical else vec
        if not lexical and not bool(np.isfinite(vec).all()):
            fused = np.where(np.isnan(vec), -np.inf, vec).astype(np.float32)
        order = np.lexsort((ids, -fused))
        if lexical:
            order = order[lex[order] > 0]
        ranked = np.zeros(len(pos), dtype=np.int64)
        ranked[order] = np.arange(1, len(order) + 1)
        none = np.zeros(len(pos), dtype=np.int64)
        vrank, lrank = (none, ranked) if lexical else (ranked, none)
    want = len(order) if request.rerankers else request.k
    if hidden:
        shown = [n for n, cid in enumerate(ids[order].tolist()) if cid not in hidden]
        order = order[np.asarray(shown[:want], dtype=np.int64)]
    else:
        order = order[:want]
    chunks = f.chunks_at(pos[order])
    cols = zip(chunks, fused[order].tolist(), vec[order].tolist(), lex[order].tolist(),
               vrank[order].tolist(), lrank[order].tolist(), strict=True)
    layer, approximate = part.layer, part.approximate
    return [Hit(layer=layer, chunk=chunk, score=score,
                vector_score=v if math.isfinite(v) else None, vector_rank=vr or None,
                lexical_score=lx if lx > 0 else None, lexical_rank=lr or None,
                matched_layer=layer, approximate=approximate)
            for chunk, score, v, lx, vr, lr in cols]

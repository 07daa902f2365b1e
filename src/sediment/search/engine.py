"""Hybrid search over a layer set: vector + BM25 -> fusion -> filters -> precedence -> top k.

Per layer, each retriever returns its best candidates (exact scan, no Python loop over
chunks). Candidates from all layers are ranked together per retriever, fused, and grouped
by chunk id: the version in the highest layer wins (local > user > delta > base, RFC 6.2)
and the versions it hides travel with the hit; hidden versions whose content differs are
conflicts (RFC 12). A logical chunk ranks by its best-matching version, so an override
that rewords a base chunk is still found by the words of the chunk it overrides.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from sediment.errors import ValidationError
from sediment.format import Chunk, LayerFile
from sediment.search.bm25 import BM25Index, tokenize
from sediment.search.fusion import Fusion, ReciprocalRankFusion
from sediment.search.vector import Metric, dot_scores, row_norms, top_k
from sediment.store import PRECEDENCE, LayerName, LayerSet
from sediment.store.events import hidden_ids

Mode = Literal["hybrid", "vector", "lexical"]
MAX_K = 1000


class _LayerIndex:
    """Derived per-file data, built on first use and dropped with the file."""

    def __init__(self, f: LayerFile) -> None:
        self.file = f
        self._kind_names: dict[int, str] | None = None
        self._norms: npt.NDArray[np.float32] | None = None
        self._bm25: BM25Index | None = None
        self._sorted: tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64] | None] | None = None
        self._bm25_lock = threading.Lock()
        self._identity_rows: bool | None = None

    def kind_names(self) -> dict[int, str]:
        if self._kind_names is None:
            sids = np.unique(self.file.records["kind"])
            self._kind_names = {int(s): self.file.string(int(s)) for s in sids.tolist()}
        return self._kind_names

    def kind_mask(self, kinds: Sequence[str] | None, include_meta: bool
                  ) -> npt.NDArray[np.bool_] | None:
        """Chunks allowed by the kind filter (None: all allowed)."""
        names = self.kind_names()
        if kinds:
            wanted = set(kinds)
            allowed = [s for s, n in names.items() if n in wanted]
        elif not include_meta and any(n.startswith("meta.") for n in names.values()):
            allowed = [s for s, n in names.items() if not n.startswith("meta.")]
        else:
            return None
        return np.isin(self.file.records["kind"], np.asarray(allowed, dtype=np.uint32))

    def identity_rows(self) -> bool:
        if self._identity_rows is None:
            rows = self.file.rows
            self._identity_rows = bool(
                len(rows) == self.file.embedding_info.rows
                and np.array_equal(rows, np.arange(len(rows))))
        return self._identity_rows

    def vector_scores(self, q: npt.NDArray[np.float32], metric: Metric,
                      normalised: bool) -> npt.NDArray[np.float32]:
        f = self.file
        scores = dot_scores(f.embeddings, q, f.quant_scale)
        if metric == "cosine" and not normalised:
            if self._norms is None:
                self._norms = row_norms(f.embeddings, f.quant_scale)
            qn = float(np.linalg.norm(q)) or 1.0
            scores = (scores / (np.maximum(self._norms, 1e-12) * qn)).astype(np.float32)
        if not self.identity_rows():
            scores = scores[f.rows]
        return scores

    def bm25(self) -> BM25Index:
        with self._bm25_lock:
            if self._bm25 is None:
                f = self.file
                contents = f.records["content"].tolist()
                self._bm25 = BM25Index(f.string(int(s)) for s in contents)
            return self._bm25

    def positions(self, ids: npt.NDArray[np.uint32]) -> npt.NDArray[np.int64]:
        """Chunk-table position of each id, or -1 when this file lacks it."""
        if self._sorted is None:
            all_ids = self.file.ids
            if len(all_ids) < 2 or bool(np.all(all_ids[1:] > all_ids[:-1])):
                self._sorted = (all_ids, None)
            else:
                order = np.argsort(all_ids, kind="stable")
                self._sorted = (all_ids[order], order.astype(np.int64))
        sorted_ids, order_or_none = self._sorted
        if len(sorted_ids) == 0:
            return np.full(len(ids), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1).astype(np.int64)
        found = sorted_ids[pos] == ids
        result = pos if order_or_none is None else order_or_none[pos]
        return np.where(found, result, -1).astype(np.int64)


_INDEXES: weakref.WeakKeyDictionary[LayerFile, _LayerIndex] = weakref.WeakKeyDictionary()


def layer_index(f: LayerFile) -> _LayerIndex:
    idx = _INDEXES.get(f)
    if idx is None:
        idx = _INDEXES[f] = _LayerIndex(f)
    return idx


@dataclass(frozen=True, slots=True)
class HiddenVersion:
    layer: LayerName
    chunk: Chunk
    conflict: bool

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer.value, "conflict": self.conflict, **self.chunk.to_dict()}


@dataclass(slots=True)
class Hit:
    layer: LayerName
    chunk: Chunk
    score: float
    vector_score: float | None = None
    vector_rank: int | None = None
    lexical_score: float | None = None
    lexical_rank: int | None = None
    matched_layer: LayerName | None = None
    hidden: list[HiddenVersion] = field(default_factory=list)
    boosts: dict[str, float] = field(default_factory=dict)

    @property
    def conflicts(self) -> list[HiddenVersion]:
        return [h for h in self.hidden if h.conflict]

    def explanation(self) -> dict[str, Any]:
        return {
            "layer": self.layer.value,
            "matched_layer": (self.matched_layer or self.layer).value,
            "vector_score": self.vector_score,
            "vector_rank": self.vector_rank,
            "bm25_score": self.lexical_score,
            "bm25_rank": self.lexical_rank,
            "fused_score": self.score,
            "boosts": dict(self.boosts),
            "hidden_versions": [f"{h.layer.value}:{h.chunk.id}" for h in self.hidden],
        }

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"layer": self.layer.value, "score": self.score,
                               **self.chunk.to_dict()}
        out["conflicts"] = [h.to_dict() for h in self.conflicts]
        if explain:
            out["explain"] = self.explanation()
        return out


Reranker = Callable[[list[Hit]], list[Hit]]
"""A domain hook (memory recency, KCP triggers) that may re-score and reorder hits."""


@dataclass(frozen=True, slots=True)
class SearchRequest:
    text: str | None = None
    k: int = 10
    kinds: tuple[str, ...] | None = None
    layers: tuple[LayerName, ...] | None = None
    include_meta: bool = False
    mode: Mode = "hybrid"
    metric: Metric = "cosine"
    fusion: Fusion = field(default_factory=ReciprocalRankFusion)
    candidates: int | None = None
    rerankers: tuple[Reranker, ...] = ()

    def validate(self, has_vector: bool) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValidationError(f"k must be a positive integer, got {self.k!r}")
        if self.k > MAX_K:
            raise ValidationError(f"k is {self.k}; the maximum is {MAX_K}")
        if self.mode not in ("hybrid", "vector", "lexical"):
            raise ValidationError(f"mode {self.mode!r} must be hybrid, vector or lexical")
        if self.metric not in ("cosine", "dot"):
            raise ValidationError(f"metric {self.metric!r} must be cosine or dot")
        if self.mode != "vector" and not (self.text and self.text.strip()):
            raise ValidationError("a lexical or hybrid search needs a non-empty query text")
        if self.mode != "lexical" and not has_vector:
            raise ValidationError("a vector or hybrid search needs a query vector")


@dataclass(slots=True)
class SearchResult:
    hits: list[Hit]
    layers: list[LayerName]
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class _Cand:
    layer: LayerName
    pos: int
    vec: float | None = None
    lex: float | None = None
    vrank: int | None = None
    lrank: int | None = None
    fused: float = 0.0


def search(layerset: LayerSet, request: SearchRequest,
           query_vec: npt.NDArray[np.float32] | None = None,
           *, normalised: bool = False) -> SearchResult:
    """Run ``request`` over ``layerset``; ``normalised`` says stored rows are unit length."""
    request.validate(query_vec is not None)
    t0 = time.perf_counter()
    names = request.layers if request.layers is not None else PRECEDENCE
    layers = layerset.layers(names)
    if request.mode != "lexical":
        layerset.schema(names)
    q = None
    if query_vec is not None and request.mode != "lexical":
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        for layer in layers:
            if layer.file.chunk_count and layer.file.dim != len(q):
                raise ValidationError(f"query vector has {len(q)} dims but layer "
                                      f"{layer.name.value} has {layer.file.dim}")
    c = request.candidates or max(request.k * 5, 50)
    cands: dict[tuple[LayerName, int], _Cand] = {}
    timings: dict[str, float] = {}
    terms = tokenize(request.text) if request.text else []
    for layer in layers:
        f = layer.file
        if f.chunk_count == 0:
            continue
        idx = layer_index(f)
        mask = idx.kind_mask(request.kinds, request.include_meta)
        if q is not None:
            t = time.perf_counter()
            scores = idx.vector_scores(q, request.metric, normalised)
            if mask is not None:
                scores = np.where(mask, scores, -np.inf).astype(np.float32)
            for p in top_k(scores, c).tolist():
                cands.setdefault((layer.name, p), _Cand(layer.name, p)).vec = float(scores[p])
            timings["vector"] = timings.get("vector", 0.0) + (time.perf_counter() - t) * 1e3
        if request.mode != "vector" and terms:
            t = time.perf_counter()
            lex = idx.bm25().scores(terms)
            lex = np.where(lex > 0, lex, -np.inf).astype(np.float32)
            if mask is not None:
                lex = np.where(mask, lex, -np.inf).astype(np.float32)
            for p in top_k(lex, c).tolist():
                cands.setdefault((layer.name, p), _Cand(layer.name, p)).lex = float(lex[p])
            timings["bm25"] = timings.get("bm25", 0.0) + (time.perf_counter() - t) * 1e3

    pool = list(cands.values())
    for attr, rank_attr in (("vec", "vrank"), ("lex", "lrank")):
        scored = [x for x in pool if getattr(x, attr) is not None]
        scored.sort(key=lambda x: (-getattr(x, attr), -x.layer.rank, x.pos))
        for r, x in enumerate(scored, 1):
            setattr(x, rank_attr, r)
    fusion = request.fusion
    if request.mode == "lexical":
        fusion = ReciprocalRankFusion(vector_weight=0.0)
    elif request.mode == "vector":
        fusion = ReciprocalRankFusion(lexical_weight=0.0)
    if hasattr(fusion, "lexical_max"):
        best = max((x.lex for x in pool if x.lex is not None), default=1.0)
        from dataclasses import replace
        fusion = replace(fusion, lexical_max=best)  # type: ignore[type-var]
    for x in pool:
        x.fused = fusion.fuse(x.vrank, x.vec, x.lrank, x.lex)

    hidden = hidden_ids(layerset.events(names))
    hits = _apply_precedence(layers, pool, request, q, normalised, hidden)
    for rerank in request.rerankers:
        hits = rerank(hits)
    timings["total"] = (time.perf_counter() - t0) * 1e3
    return SearchResult(hits[: request.k], [layer.name for layer in layers], timings)


def _apply_precedence(layers: list[Any], pool: list[_Cand], request: SearchRequest,
                      q: npt.NDArray[np.float32] | None, normalised: bool,
                      hidden: set[int]) -> list[Hit]:
    """Group candidates by id, keep the highest layer's version, drop superseded and
    forgotten ids, and filter on the version that is shown."""
    files = {layer.name: layer.file for layer in layers}
    best: dict[int, _Cand] = {}
    for x in pool:
        cid = int(files[x.layer].ids[x.pos])
        cur = best.get(cid)
        if cur is None or (x.fused, x.layer.rank) > (cur.fused, cur.layer.rank):
            best[cid] = x
    ordered = sorted(best.items(), key=lambda kv: (-kv[1].fused, -kv[1].layer.rank, kv[0]))
    hits: list[Hit] = []
    want = request.k
    id_arr = np.asarray([cid for cid, _ in ordered], dtype=np.uint32)
    where = {name: layer_index(f).positions(id_arr) for name, f in files.items()}
    for n, (cid, cand) in enumerate(ordered):
        if cid in hidden:
            continue
        versions = [(name, int(where[name][n])) for name in PRECEDENCE
                    if name in files and where[name][n] >= 0]
        top_name, top_pos = versions[0]
        top = files[top_name].chunk_at(top_pos)
        if request.kinds:
            if top.kind not in request.kinds:
                continue
        elif not request.include_meta and top.kind.startswith("meta."):
            continue
        lower_versions = []
        for name, pos in versions[1:]:
            lower = files[name].chunk_at(pos)
            differs = (lower.content, lower.kind) != (top.content, top.kind)
            lower_versions.append(HiddenVersion(name, lower, differs))
        hit = Hit(top_name, top, cand.fused, cand.vec, cand.vrank, cand.lex, cand.lrank,
                  cand.layer, lower_versions)
        if top_name != cand.layer and q is not None:
            hit.vector_score = float(_score_one(files[top_name], top_pos, q, request.metric,
                                                normalised))
        hits.append(hit)
        if len(hits) >= want and not request.rerankers:
            break
    return hits


def _score_one(f: LayerFile, pos: int, q: npt.NDArray[np.float32], metric: Metric,
               normalised: bool) -> float:
    v = f.vector(pos)
    s = float(v @ q)
    if metric == "cosine" and not normalised:
        s /= max(float(np.linalg.norm(v)) * float(np.linalg.norm(q)), 1e-12)
    return s

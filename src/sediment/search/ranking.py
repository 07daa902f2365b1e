"""The ranking core both backends call: a pool of candidate versions in, hits out.

A pool (:class:`Candidates`) is every candidate version a search gathered, from any
layer: its chunk id, the rank of its layer (local 3 > user 2 > delta 1 > base 0), a
position that breaks the last ties (the row in its file or table), both raw scores
(cosine, NaN when the vector side did not score it; BM25, 0 when no term matched) and
whether an approximate index proposed it. :func:`rank` gives each version its rank on each
side, fuses them with the request's fusion, keeps one version per id (the best-scoring
one: a logical chunk ranks by its best-matching version), then resolves precedence: the
highest layer's version of each id is shown, the kind filter applies to it, the versions
it shadows travel with the hit (a conflict when their content or kind differs, RFC 12),
hidden ids (superseded, forgotten, another actor's) are dropped, and the list stops at
``k`` unless rerankers will reorder it. A backend answers only what :class:`Versions`
asks (each id's versions in precedence order, a version's kind, chunk and vector score),
so the layer files' engine and the PostgreSQL search give the same hits for the same pool
because this is the only code that orders and resolves it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from sediment.format import Chunk
from sediment.search.fusion import Fusion, Pool
from sediment.search.hits import HiddenVersion, Hit
from sediment.store import LayerName
from sediment.store.rules import shown_kind

if TYPE_CHECKING:
    from sediment.search.engine import SearchRequest

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
R = TypeVar("R")
_BY_RANK = {n.rank: n for n in LayerName}


def default_candidates(mode: str, k: int) -> int:
    """Per retriever and layer: a deep pool for fusion, a shallow one for one retriever
    (it only has to survive precedence and filters; an approximate index then searches
    less, which is most of its cost)."""
    return max(k * 5, 50) if mode == "hybrid" else max(k * 2, 20)


def ranks(score: F32, valid: npt.NDArray[np.bool_], tiebreak: Sequence[I64]) -> I64:
    """1-based rank of each valid entry by descending score (ties by ``tiebreak``); 0 else."""
    out = np.zeros(len(score), dtype=np.int64)
    idx = np.flatnonzero(valid)
    if len(idx):
        keys = [t[idx] for t in reversed(tiebreak)] + [-score[idx]]
        order = idx[np.lexsort(keys)]
        out[order] = np.arange(1, len(order) + 1)
    return out


@dataclass(frozen=True, slots=True)
class Candidates:
    """The pool, one entry per candidate version (see the module docstring)."""

    ids: I64
    layer_rank: I64
    pos: I64
    vec: F32
    lex: F32
    approximate: npt.NDArray[np.bool_]


def fuse_pool(pool: Candidates, *, mode: str, fusion: Fusion, has_vector: bool
              ) -> tuple[I64, F32, I64, I64]:
    """Rank, fuse and group a pool: the entries kept (one per id, in fused order), and per
    entry its fused score and its rank on each side (0: not ranked there). ``mode`` is the
    request's (``hybrid``, ``vector`` or ``lexical``); ``has_vector``: the query had one."""
    ids, layer_rank, vec, lex = pool.ids, pool.layer_rank, pool.vec, pool.lex
    tie = [-layer_rank, ids, pool.pos]  # as hits are ordered: layer, then id
    none = np.zeros(len(ids), dtype=np.int64)
    vrank = ranks(vec, np.isfinite(vec), tie) if has_vector else none
    lrank = ranks(lex, lex > 0, tie) if mode != "vector" else none
    if mode == "lexical":
        fused = lex
    elif mode == "vector":
        fused = np.where(np.isnan(vec), -np.inf, vec).astype(np.float32)
    else:
        fused = fusion.combine(Pool(vec, lex, vrank, lrank))
    order = np.lexsort((ids, -layer_rank, -fused))
    _, first = np.unique(ids[order], return_index=True)
    best = order[np.sort(first)]  # one candidate per id, in fused order
    if mode == "lexical":
        best = best[lex[best] > 0]
    return best, fused, vrank, lrank


class Versions(Protocol[R]):
    """What precedence reads from a backend; ``R`` is its handle on one stored version (a
    position in a layer file, a fetched row)."""

    def of(self, ids: I64) -> Iterator[Sequence[tuple[LayerName, R]]]:
        """For each of ``ids`` in turn, its versions in the layers searched, highest
        precedence first (empty if it has none); read lazily, as ranking stops at k."""
        ...

    def kind(self, layer: LayerName, version: R) -> str: ...

    def chunk(self, layer: LayerName, version: R) -> Chunk: ...

    def vector_score(self, layer: LayerName, version: R) -> float:
        """The query vector's score against this version (the request's metric)."""
        ...


def rank(pool: Candidates, versions: Versions[R], request: SearchRequest,
         hidden: AbstractSet[int], *, has_vector: bool) -> list[Hit]:
    """The hits of a pool, best first (see the module docstring). A hit shown from a
    higher layer than the one its best version matched in is given that shown version's
    own vector score."""
    if not len(pool.ids):
        return []
    best, fused, vrank, lrank = fuse_pool(pool, mode=request.mode, fusion=request.fusion,
                                          has_vector=has_vector)
    ids = pool.ids[best]
    want = 0 if request.rerankers else request.k
    kinds = request.kinds
    cols = zip(ids.tolist(), fused[best].tolist(), pool.vec[best].tolist(),
               pool.lex[best].tolist(), vrank[best].tolist(), lrank[best].tolist(),
               pool.layer_rank[best].tolist(),
               pool.approximate[best].tolist(), versions.of(ids), strict=True)
    hits: list[Hit] = []
    for cid, score, v, lx, vr, lr, matched_rank, approximate, found in cols:
        if cid in hidden or not found:
            continue
        top_name, top_ref = found[0]
        top_kind = versions.kind(top_name, top_ref)
        if not (top_kind in kinds if kinds else shown_kind(top_kind, request.include_meta)):
            continue
        top = versions.chunk(top_name, top_ref)
        shadowed = []
        for name, ref in found[1:]:
            lower = versions.chunk(name, ref)
            differs = (lower.content, lower.kind) != (top.content, top.kind)
            shadowed.append(HiddenVersion(name, lower, differs))
        matched = _BY_RANK[matched_rank]
        vector_score = v if math.isfinite(v) else None
        if top_name != matched and has_vector:
            vector_score = versions.vector_score(top_name, top_ref)
        hits.append(Hit(layer=top_name, chunk=top, score=score, vector_score=vector_score,
                        vector_rank=vr or None, lexical_score=lx if lx > 0 else None,
                        lexical_rank=lr or None, matched_layer=matched, hidden=shadowed,
                        approximate=approximate))
        if len(hits) == want:
            break
    return hits

"""The search service every adapter calls: map the request, embed the query, check the
profiles, add the chosen rerankers, search, and shape the response."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.embed import Embedder
from sediment.errors import SchemaMismatchError, ValidationError
from sediment.format.profile import check_compatible, describe_profile, unit_vectors
from sediment.ops.read import source_matcher
from sediment.ops.requests import SearchOptions, SearchParams
from sediment.ops.rerank import RerankerFactory, with_rerankers
from sediment.search import MAX_K, SearchRequest, SearchResult, make_fusion
from sediment.search.backend import search_store
from sediment.store import PRECEDENCE, LayerName, LayerStore, LayerSummary
from sediment.store.rules import search_kinds_problem


def _summaries(layerset: LayerStore, names: Sequence[object] | None) -> list[LayerSummary]:
    """The searched layers that hold chunks; one read when the store reads them together
    (``summaries``: a database's layers table), not one per layer and one more."""
    many = getattr(layerset, "summaries", None)
    found = (many(names) if many is not None else
             (layerset.summary(n, max_ids=0) for n in layerset.present(names)))  # type: ignore[arg-type]
    return [s for s in found if s is not None and s.chunks]


def check_profile(layerset: LayerStore, embedder: Embedder, names: Sequence[object] | None
                  ) -> None:
    """A text query needs the embedder that made the layers' vectors (RFC 8.4.8)."""
    _check_profile(_summaries(layerset, names), embedder)


def _check_profile(summaries: Sequence[LayerSummary], embedder: Embedder) -> None:
    active = embedder.profile.to_dict()
    for layer in summaries:
        recorded = layer.profile
        where = f"layer {layer.name.value} ({layer.location})"
        if recorded is None:
            if layer.dim != active["dim"]:
                raise SchemaMismatchError(
                    f"{where} has {layer.dim}-dim vectors "
                    f"but the active embedder ({describe_profile(active)}) makes "
                    f"{active['dim']}-dim vectors")
            continue
        check_compatible(recorded, active, a_name=where,
                         b_name="the active embedder",
                         consequence="use the same embedder, pass a query vector, or search "
                                     "lexically (--mode lexical)")


def unit_rows(layerset: LayerStore, names: Sequence[object] | None) -> bool:
    """True when every searched layer records L2-normalised vectors (cosine = dot)."""
    return _unit_rows(_summaries(layerset, names))


def _unit_rows(layers: Sequence[LayerSummary]) -> bool:
    return bool(layers) and all(unit_vectors(la.profile) for la in layers)


def run_search(layerset: LayerStore, request: SearchRequest, *,
               embedder: Embedder | None = None,
               query_vec: Sequence[float] | npt.NDArray[np.float32] | None = None
               ) -> SearchResult:
    """Search with a text (embedded here) or an explicit query vector.

    Runs exactly the rerankers ``request`` carries (see :mod:`sediment.ops.rerank`), so it
    ranks like ``search.search()`` given the same vector.
    """
    names = request.layers if request.layers is not None else PRECEDENCE
    layers = _summaries(layerset, names)
    vec: npt.NDArray[np.float32] | None = None
    if query_vec is not None:
        vec = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    elif request.mode != "lexical":
        if embedder is None:
            raise ValidationError("a text search needs an embedder (or use --mode lexical)")
        assert request.text is not None
        _check_profile(layers, embedder)  # the query's vector needs the layers' embedder
        vec = np.asarray(embedder.embed([request.text])[0], dtype=np.float32)
    return search_store(layerset, request, vec, normalised=_unit_rows(layers))


def engine_request(params: SearchParams, actor: str | None = None) -> SearchRequest:
    """The engine's request for a validated ``params`` made by ``actor`` (the one place
    they are mapped)."""
    layers = None if params.layers is None else tuple(LayerName(x) for x in params.layers)
    request = SearchRequest(text=params.query, k=params.k, kinds=params.kinds, layers=layers,
                            mode=params.search_mode, actor=actor)
    if isinstance(params, SearchOptions):
        request = replace(
            request, metric=params.metric, include_meta=params.include_meta,
            exact=params.exact, mixed_schemas=params.mixed_schemas,
            fusion=make_fusion(params.fusion, k=params.rrf_k,
                               vector_weight=params.vector_weight,
                               lexical_weight=params.lexical_weight))
    return request


def run_query(layerset: LayerStore, params: SearchParams, *, embedder: Embedder | None,
              rerankers: Sequence[RerankerFactory], actor: str | None = None
              ) -> SearchResult:
    """The search service: ``params`` (already validated) by ``actor`` (None: a trusted
    local command, which reads every local note), with the rerankers the adapter chose,
    e.g. :data:`sediment.ops.rerank.STANDARD`. Every adapter's search passes here, so
    here it refuses a kind filter naming memories (``sediment.store.rules``)."""
    problem = search_kinds_problem(params.kinds or ())
    if problem is not None:
        raise ValidationError(f"filters.kind: {problem}")
    request = with_rerankers(layerset, engine_request(params, actor), rerankers)
    source = params.filters.source if params.filters is not None else None
    if source is None:
        return run_search(layerset, request, embedder=embedder, query_vec=params.query_vec)
    # The source filter keeps the best matches from that source among the MAX_K best.
    result = run_search(layerset, replace(request, k=MAX_K), embedder=embedder,
                        query_vec=params.query_vec)
    keep = source_matcher(layerset, source)
    result.hits = [h for h in result.hits if keep(h.chunk.sources)][:params.k]
    return result


def search_response(params: SearchParams, result: SearchResult) -> dict[str, Any]:
    """The JSON shape of a search, the same for the CLI's ``--json``, MCP and HTTP.

    ``explain`` (a :class:`SearchOptions` field) adds each hit's score breakdown and the
    timings; without it ``timings_ms`` is null."""
    explain = isinstance(params, SearchOptions) and params.explain
    return {
        "query": params.query,
        "layers": [n.value for n in result.layers],
        "results": [h.to_dict(explain=explain) for h in result.hits],
        "timings_ms": result.timings_ms if explain else None,
    }

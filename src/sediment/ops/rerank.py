"""Which domain rerankers a search applies: chosen by the caller, composed here.

The engine runs exactly the rerankers a :class:`~sediment.search.SearchRequest` carries, so
``search.search()`` and ``ops.run_search()`` rank one request the same way. An adapter
picks a pipeline: a tuple of factories, each looking at the layer set and the request and
returning a reranker, or None when it has nothing to do (no KCP units compiled, no query
text). ``STANDARD`` is what ``sediment search`` and the MCP ``agents_search`` tool use;
a memory or context service composes its own, e.g. ``(*STANDARD, memory_recency)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from sediment.kcp import KcpIndex, KcpReranker
from sediment.search import SearchRequest
from sediment.search.hits import Reranker
from sediment.store import PRECEDENCE, LayerSet, LayerStore

__all__ = ["STANDARD", "RerankerFactory", "kcp_triggers", "with_rerankers"]

RerankerFactory = Callable[[LayerSet, SearchRequest], Reranker | None]
"""Builds one reranker for a request over a layer set, or None to leave the hits alone."""


def kcp_triggers(layerset: LayerSet, request: SearchRequest) -> Reranker | None:
    """KCP: units whose triggers the query names rank up, superseded units rank below their
    successors. Only for a text query over layers that hold compiled manifests."""
    if not request.text:
        return None
    names = request.layers if request.layers is not None else PRECEDENCE
    index = KcpIndex.from_layerset(layerset, names)
    return KcpReranker(index, request.text) if index.units else None


STANDARD: tuple[RerankerFactory, ...] = (kcp_triggers,)
"""The ranking of ``sediment search`` and ``agents_search``: KCP when manifests exist."""


def with_rerankers(layerset: LayerStore, request: SearchRequest,
                   factories: Sequence[RerankerFactory]) -> SearchRequest:
    """``request`` with the rerankers ``factories`` build appended, in order. The domain
    rerankers read layer files (KCP units are compiled into them), so a store of another
    backend gets none (docs/team-server.md)."""
    files = layerset.layer_files()
    if files is None:
        return request
    built = [r for make in factories if (r := make(files, request)) is not None]
    return replace(request, rerankers=(*request.rerankers, *built)) if built else request

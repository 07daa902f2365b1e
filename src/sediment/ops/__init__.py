"""Services every adapter calls: search and write (compile lives in ``sediment.ingest``).

Adapters build a request model of :mod:`sediment.ops.requests` with ``parse`` (strict; one
:class:`~sediment.errors.RequestError` naming each bad field), call the service, and show
the dictionary it returns.
"""

from sediment.ops.query import run_query, run_search, search_response
from sediment.ops.requests import (
    KnowledgeRequest,
    ProposeRequest,
    SearchOptions,
    SearchParams,
    WriteRequest,
    parse,
)
from sediment.ops.rerank import STANDARD, RerankerFactory, with_rerankers
from sediment.ops.write import write_context

__all__ = [
    "STANDARD",
    "KnowledgeRequest",
    "ProposeRequest",
    "RerankerFactory",
    "SearchOptions",
    "SearchParams",
    "WriteRequest",
    "parse",
    "run_query",
    "run_search",
    "search_response",
    "with_rerankers",
    "write_context",
]

"""Search over any storage backend: the file layers run this package's engine; a backend
that searches by itself (PostgreSQL with pgvector) implements :class:`SearchableStore`."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from sediment.search.engine import SearchRequest, SearchResult, search
from sediment.store import LayerStore


@runtime_checkable
class SearchableStore(LayerStore, Protocol):
    """A :class:`~sediment.store.LayerStore` that ranks a :class:`SearchRequest` itself,
    with the engine's semantics: per-layer candidates from both retrievers, every candidate
    scored by both, the request's fusion, precedence, hidden ids, filters, rerankers."""

    def search(self, request: SearchRequest, query_vec: npt.NDArray[np.float32] | None, *,
               normalised: bool = False) -> SearchResult:
        """Run ``request``; ``normalised`` says stored rows are unit length."""


def search_store(store: LayerStore, request: SearchRequest,
                 query_vec: npt.NDArray[np.float32] | None = None, *,
                 normalised: bool = False) -> SearchResult:
    """``request`` over ``store``, whichever backend it is."""
    files = store.layer_files()
    if files is not None:
        return search(files, request, query_vec, normalised=normalised)
    if not isinstance(store, SearchableStore):
        raise TypeError(f"{type(store).__name__} cannot search")
    return store.search(request, query_vec, normalised=normalised)

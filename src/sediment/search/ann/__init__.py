"""Approximate nearest-neighbour search for very large layers (HNSW via usearch).

The index is a derived cache beside the layer file, named by the layer's content key;
the engine uses it for layers of at least :data:`ANN_MIN_ROWS` rows when it exists and
matches, and scans exactly otherwise (or when ``SearchRequest(exact=True)``).
"""

from sediment.search.ann.index import (
    ANN_MIN_ROWS,
    MAX_FETCH,
    MIN_FETCH,
    AnnIndex,
    build_index,
    eligible,
    ensure_index,
    find_index,
    index_metric,
    index_path,
    stale_indexes,
)
from sediment.search.ann.key import content_key

__all__ = [
    "ANN_MIN_ROWS",
    "MAX_FETCH",
    "MIN_FETCH",
    "AnnIndex",
    "build_index",
    "content_key",
    "eligible",
    "ensure_index",
    "find_index",
    "index_metric",
    "index_path",
    "stale_indexes",
]

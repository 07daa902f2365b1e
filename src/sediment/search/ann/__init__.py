"""Approximate nearest-neighbour search for very large layers (an HNSW graph via FAISS).

The index is a derived cache beside the layer file, named by a hash of the embedding rows
it covers; the engine uses it for layers of at least :data:`ANN_MIN_ROWS` rows when one
matches all of the layer's rows or a prefix of them (the rest are scanned exactly), and
scans exactly otherwise (or when ``SearchRequest(exact=True)``).
"""

from sediment.search.ann.index import (
    ANN_MIN_ROWS,
    LINKS,
    MAX_FETCH,
    MIN_FETCH,
    SEARCH,
    AnnIndex,
    IndexFile,
    build_index,
    clean_indexes,
    default_breadth,
    eligible,
    ensure_index,
    find_index,
    index_files,
    index_metric,
    index_path,
    open_cost,
    rent_paid,
    scan_cost,
    stale_indexes,
)
from sediment.search.ann.key import rows_key

__all__ = [
    "ANN_MIN_ROWS",
    "LINKS",
    "MAX_FETCH",
    "MIN_FETCH",
    "SEARCH",
    "AnnIndex",
    "IndexFile",
    "build_index",
    "clean_indexes",
    "default_breadth",
    "eligible",
    "ensure_index",
    "find_index",
    "index_files",
    "index_metric",
    "index_path",
    "open_cost",
    "rent_paid",
    "rows_key",
    "scan_cost",
    "stale_indexes",
]

"""Exact vector scoring, BM25, fusion strategies and the layered search engine."""

from sediment.search.bm25 import BM25Index, tokenize
from sediment.search.engine import (
    MAX_K,
    HiddenVersion,
    Hit,
    Reranker,
    SearchRequest,
    SearchResult,
    search,
)
from sediment.search.fusion import Fusion, ReciprocalRankFusion, WeightedFusion, make_fusion

__all__ = [
    "MAX_K",
    "BM25Index",
    "Fusion",
    "HiddenVersion",
    "Hit",
    "ReciprocalRankFusion",
    "Reranker",
    "SearchRequest",
    "SearchResult",
    "WeightedFusion",
    "make_fusion",
    "search",
    "tokenize",
]

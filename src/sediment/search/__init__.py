"""Exact and approximate vector scoring, BM25, fusion strategies and the layered engine."""

from sediment.search.analysis import ANALYZERS, DEFAULT_ANALYZER
from sediment.search.bm25 import BM25Index
from sediment.search.engine import MAX_K, SearchRequest, SearchResult, search
from sediment.search.fusion import (
    DEFAULT_FUSION,
    FUSIONS,
    ConvexFusion,
    Fusion,
    Pool,
    ReciprocalRankFusion,
    WeightedFusion,
    make_fusion,
)
from sediment.search.hits import HiddenVersion, Hit, Reranker
from sediment.search.params import BM25Params

__all__ = [
    "ANALYZERS",
    "DEFAULT_ANALYZER",
    "DEFAULT_FUSION",
    "FUSIONS",
    "MAX_K",
    "BM25Index",
    "BM25Params",
    "ConvexFusion",
    "Fusion",
    "HiddenVersion",
    "Hit",
    "Pool",
    "ReciprocalRankFusion",
    "Reranker",
    "SearchRequest",
    "SearchResult",
    "WeightedFusion",
    "make_fusion",
    "search",
]

"""Parameters of the lexical side: the analyzer picks the postings, k1 and b the scoring."""

from __future__ import annotations

from dataclasses import dataclass

from sediment.search.analysis import DEFAULT_ANALYZER


@dataclass(frozen=True, slots=True)
class BM25Params:
    """Analyzer and Okapi constants (defaults: ``english``, k1 0.9, b 0.4; see bm25.py)."""

    analyzer: str = DEFAULT_ANALYZER
    k1: float = 0.9
    b: float = 0.4

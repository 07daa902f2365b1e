"""Text analysis for BM25: words, English stopwords, Snowball stems.

A query and a chunk match lexically when they share a term after analysis. Two analyzers:

- ``english`` (the default): lowercase word tokens (digits kept), the Snowball English stop
  list, and the Snowball (Porter 2) English stemmer, so "adopted", "adopting" and "adoption"
  meet at "adopt". Stemming and the stop list are what Lucene's and Anserini's English
  analyzers do; on LoCoMo they raise BM25 recall@5 from 0.527 to 0.605 (docs/quality.md).
- ``plain``: lowercase words minus a short stop list, no stemming (the former default).

Stems come from PyStemmer (the Snowball project's C stemmers with a Python binding; wheels
for every major platform): the pure-Python ``snowballstemmer`` produces the same stems but
is about 20 times slower, too slow to index a million chunks. Stems are memoised per word.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Literal

import Stemmer

from sediment.errors import ValidationError

AnalyzerName = Literal["english", "plain"]
Analyzer = Callable[[str], list[str]]

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

PLAIN_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "has", "have",
    "how", "i", "if", "in", "into", "is", "it", "its", "of", "on", "or", "that", "the",
    "their", "then", "there", "these", "this", "to", "was", "were", "what", "when", "where",
    "which", "who", "why", "will", "with",
))

ENGLISH_STOPWORDS = PLAIN_STOPWORDS | frozenset((
    "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours",
    "yourself", "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself",
    "itself", "they", "them", "theirs", "themselves", "whom", "those", "am", "been", "being",
    "had", "having", "do", "does", "did", "doing", "because", "until", "while", "about",
    "against", "between", "through", "during", "before", "after", "above", "below", "up",
    "down", "out", "off", "over", "under", "again", "further", "once", "here", "all", "any",
    "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not",
    "only", "own", "same", "so", "than", "too", "very", "s", "t", "can", "just", "don",
    "should", "now",
))
"""The Snowball project's English stop list (the words of ``english.stop`` without the
contractions, which the tokenizer splits anyway)."""


class _Stems:
    """Snowball English stems, memoised: a corpus has far fewer distinct words than tokens."""

    def __init__(self) -> None:
        self._stemmer = Stemmer.Stemmer("english")
        self._memo: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, words: list[str]) -> list[str]:
        memo = self._memo
        missing = [w for w in words if w not in memo]
        if missing:
            with self._lock:  # a PyStemmer object is not thread-safe
                for w, s in zip(missing, self._stemmer.stemWords(missing), strict=True):
                    memo[w] = s
        return [memo[w] for w in words]


_STEMS = _Stems()


def plain_tokens(text: str) -> list[str]:
    """Lowercased word tokens without a short list of English stopwords; digits kept."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in PLAIN_STOPWORDS]


def english_tokens(text: str) -> list[str]:
    """Lowercased words, Snowball English stopwords removed, Snowball English stems."""
    return _STEMS([t for t in _TOKEN.findall(text.lower()) if t not in ENGLISH_STOPWORDS])


ANALYZERS: dict[str, Analyzer] = {"english": english_tokens, "plain": plain_tokens}
DEFAULT_ANALYZER: AnalyzerName = "english"


def analyzer(name: str) -> Analyzer:
    try:
        return ANALYZERS[name]
    except KeyError:
        raise ValidationError(f"unknown analyzer {name!r}: expected "
                              f"{' or '.join(repr(n) for n in ANALYZERS)}") from None

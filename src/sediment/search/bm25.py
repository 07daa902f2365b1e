"""Okapi BM25 over chunk content: per-layer postings, statistics summed over the layers.

A layer's lexical data is a :class:`Postings`: for each term its documents and term
frequencies (CSR arrays, terms in sorted UTF-8 order so that a term is found by binary
search without building a dictionary), each document's length, and the layer's total
length. It holds *counts only*, nothing that depends on other layers or on k1 and b, so it
can be persisted beside the layer (``lexicon.py``) and combined at query time.

The statistics a score depends on, document frequency, document count and average length,
are those of all the layers searched together: each is a sum over their postings
(:func:`query_stats`), so the same text scores the same in whichever layer it sits, and a
one-chunk local note is not scored against a document frequency of 1 while the base's
copies of the same words are scored against thousands. A query costs one vectorised
scatter-add per query term and layer (a term's postings name each document once).

Defaults k1 = 0.9, b = 0.4 are Anserini's (Lin et al., tuned on MS MARCO and used by
Pyserini's BM25 baselines): a lower b than Robertson and Zaragoza's textbook 0.75 penalises
length less, which suits short chunks such as memories; on LoCoMo they raise recall@5 of
stemmed BM25 from 0.605 to 0.623 (docs/quality.md). IDF is the non-negative Lucene form
``log(1 + (N - df + 0.5) / (df + 0.5))``. Terms come from an analyzer (``analysis.py``).
Term frequencies are stored as 16-bit counts, saturating at 65,535 (where BM25's tf factor
is within 1e-4 of its limit).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from sediment.search.analysis import DEFAULT_ANALYZER, analyzer

K1 = 0.9
B = 0.4
TF_MAX = 65535
BATCH_TOKENS = 1 << 16
"""Tokens numbered per ``np.fromiter`` call while building."""

F32 = npt.NDArray[np.float32]


class _Terms(Sequence[bytes]):
    """The sorted terms as a sequence of UTF-8 byte strings, read from the blob on demand."""

    def __init__(self, blob: memoryview | bytes, offsets: npt.NDArray[np.uint64]) -> None:
        self._blob = blob
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i: int) -> bytes:  # type: ignore[override]
        return bytes(self._blob[int(self._offsets[i]):int(self._offsets[i + 1])])


class _Vocabulary(dict[str, int]):
    """Numbers terms in order of first sight; a lookup stays in C for known terms."""

    def __missing__(self, term: str) -> int:
        number = self[term] = len(self)
        return number


class Postings:
    """One layer's inverted index for one analyzer: counts, no statistics.

    ``term_offsets[t]:term_offsets[t + 1]`` is term ``t``'s bytes in ``term_blob``;
    ``offsets[t]:offsets[t + 1]`` its postings in ``docs`` (chunk-table positions,
    ascending) and ``tf``."""

    __slots__ = ("_terms", "analyzer", "doc_len", "docs", "n_docs", "offsets", "term_blob",
                 "term_offsets", "tf", "total_len")

    def __init__(self, analyzer_name: str, doc_len: npt.NDArray[np.uint32], total_len: int,
                 term_blob: memoryview | bytes, term_offsets: npt.NDArray[np.uint64],
                 offsets: npt.NDArray[np.uint64], docs: npt.NDArray[np.uint32],
                 tf: npt.NDArray[np.uint16]) -> None:
        self.analyzer = analyzer_name
        self.doc_len = doc_len
        self.n_docs = len(doc_len)
        self.total_len = total_len
        self.term_blob = term_blob
        self.term_offsets = term_offsets
        self.offsets = offsets
        self.docs = docs
        self.tf = tf
        self._terms = _Terms(term_blob, term_offsets)

    @property
    def n_terms(self) -> int:
        return len(self._terms)

    @classmethod
    def build(cls, texts: Iterable[str], analyzer_name: str = DEFAULT_ANALYZER) -> Postings:
        """Analyse every text; count each (term, document) pair with one numpy sort
        rather than a Python loop over terms."""
        analyze = analyzer(analyzer_name)
        vocab = _Vocabulary()
        lengths: list[int] = []
        batch: list[str] = []
        ids: list[npt.NDArray[np.int64]] = []
        for text in texts:
            tokens = analyze(text)
            lengths.append(len(tokens))
            batch.extend(tokens)
            if len(batch) >= BATCH_TOKENS:
                ids.append(np.fromiter(map(vocab.__getitem__, batch), np.int64, len(batch)))
                batch.clear()
        ids.append(np.fromiter(map(vocab.__getitem__, batch), np.int64, len(batch)))
        words = sorted(vocab)
        rank = np.empty(len(words), dtype=np.int64)
        rank[np.asarray([vocab[w] for w in words], dtype=np.int64)] = np.arange(len(words))
        encoded = [w.encode("utf-8") for w in words]
        term_offsets = np.zeros(len(words) + 1, dtype=np.uint64)
        np.cumsum([len(e) for e in encoded], out=term_offsets[1:])
        n = len(lengths)
        doc_len = np.asarray(lengths, dtype=np.int64)
        docs_of_tokens = np.repeat(np.arange(n, dtype=np.int64), doc_len)
        pairs, tf = np.unique(rank[np.concatenate(ids)] * max(n, 1) + docs_of_tokens,
                              return_counts=True)  # sorted: by term, then document
        terms = pairs // max(n, 1)
        offsets = np.zeros(len(words) + 1, dtype=np.uint64)
        np.cumsum(np.bincount(terms, minlength=len(words)), out=offsets[1:])
        return cls(analyzer_name, doc_len.astype(np.uint32), int(doc_len.sum()),
                   b"".join(encoded), term_offsets, offsets,
                   (pairs - terms * max(n, 1)).astype(np.uint32),
                   np.minimum(tf, TF_MAX).astype(np.uint16))

    def term_id(self, term: str) -> int:
        """The term's number, or -1 when no document of this layer has it."""
        key = term.encode("utf-8")
        i = bisect.bisect_left(self._terms, key)
        return i if i < len(self._terms) and self._terms[i] == key else -1

    def df(self, tid: int) -> int:
        return 0 if tid < 0 else int(self.offsets[tid + 1] - self.offsets[tid])

    def term_df(self, term: str) -> int:
        return self.df(self.term_id(term))

    def scores(self, stats: QueryStats, k1: float = K1, b: float = B) -> F32:
        """BM25 of every document of this layer under ``stats`` (0 where no term occurs)."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        if not self.n_docs or stats.avg_len <= 0:
            return out
        for term, idf in zip(stats.terms, stats.idf.tolist(), strict=True):
            tid = self.term_id(term)
            if tid < 0:
                continue
            lo, hi = int(self.offsets[tid]), int(self.offsets[tid + 1])
            docs = self.docs[lo:hi]
            out[docs] += term_scores(self.tf[lo:hi], self.doc_len[docs], idf, stats.avg_len,
                                     k1, b)
        return out


def term_scores(tf: npt.NDArray[np.integer], doc_len: npt.NDArray[np.integer], idf: float,
                avg_len: float, k1: float, b: float) -> F32:
    """One query term's Okapi BM25 part in each document holding it, in float32: the one
    formula both stores sum, so they rank alike, ties included."""
    tf32 = tf.astype(np.float32)
    norm = np.float32(k1) * (np.float32(1.0 - b) + np.float32(b / avg_len)
                             * doc_len.astype(np.float32))
    return cast(F32, np.float32(idf) * tf32 * np.float32(k1 + 1.0) / (tf32 + norm))


class PostingsStack:
    """One layer's postings in parts that cover consecutive runs of its chunk table (a
    persisted prefix and the chunks appended after it): their counts add up, and their
    scores, in order, are the layer's."""

    __slots__ = ("analyzer", "n_docs", "parts", "total_len")

    def __init__(self, parts: Sequence[Postings]) -> None:
        if not parts or len({p.analyzer for p in parts}) != 1:
            raise ValueError("a stack needs one or more postings of one analyzer")
        self.parts = tuple(parts)
        self.analyzer = parts[0].analyzer
        self.n_docs = sum(p.n_docs for p in parts)
        self.total_len = sum(p.total_len for p in parts)

    def term_df(self, term: str) -> int:
        return sum(p.term_df(term) for p in self.parts)

    def scores(self, stats: QueryStats, k1: float = K1, b: float = B) -> F32:
        if len(self.parts) == 1:
            return self.parts[0].scores(stats, k1, b)
        return np.concatenate([p.scores(stats, k1, b) for p in self.parts])


class Excluded:
    """Documents of one layer that a search's statistics leave out (the chunks no general
    search can return: events and actors' memories), so the same text scores the same
    whether a backend keeps those chunks beside the others or apart
    (``sediment.store.rules``).
    ``mask`` marks them by chunk-table position, over all of ``stack``'s parts."""

    __slots__ = ("_df", "mask", "n_docs", "stack", "total_len")

    def __init__(self, stack: PostingsStack, mask: npt.NDArray[np.bool_]) -> None:
        self.stack, self.mask = stack, mask
        self.n_docs = int(mask.sum())
        lengths = np.concatenate([p.doc_len for p in stack.parts])
        self.total_len = int(lengths[mask].sum())
        self._df: dict[str, int] = {}

    def term_df(self, term: str) -> int:
        got = self._df.get(term)
        if got is None:
            got, start = 0, 0
            for p in self.stack.parts:
                tid = p.term_id(term)
                if tid >= 0:
                    docs = p.docs[int(p.offsets[tid]):int(p.offsets[tid + 1])]
                    got += int(self.mask[start + docs.astype(np.int64)].sum())
                start += p.n_docs
            if len(self._df) > 4096:
                self._df.clear()
            self._df[term] = got
        return got


@dataclass(frozen=True, slots=True)
class QueryStats:
    """What a query's scores depend on beyond one document: the query terms, each term's
    IDF and the average document length, over every layer searched together."""

    terms: tuple[str, ...]
    idf: F32
    n_docs: int
    avg_len: float


def query_stats(layers: Sequence[Postings | PostingsStack], terms: Sequence[str],
                excluded: Sequence[Excluded] = ()) -> QueryStats:
    """Document count, average length and document frequencies summed over ``layers``,
    less the ``excluded`` documents."""
    n = sum(p.n_docs for p in layers) - sum(x.n_docs for x in excluded)
    total = sum(p.total_len for p in layers) - sum(x.total_len for x in excluded)
    return stats_of(terms, [sum(p.term_df(t) for p in layers)
                            - sum(x.term_df(t) for x in excluded) for t in terms], n, total)


def stats_of(terms: Sequence[str], df: Sequence[int], n_docs: int, total_len: int
             ) -> QueryStats:
    """A query's statistics from its terms' document frequencies and the collection's
    document count and total length, however a backend counted them."""
    d = np.asarray(df, dtype=np.float64)
    idf = np.log1p((n_docs - d + 0.5) / (d + 0.5)).astype(np.float32)
    return QueryStats(tuple(terms), idf, n_docs, total_len / n_docs if n_docs else 0.0)


class BM25Index:
    """BM25 over one list of documents, with their own statistics."""

    def __init__(self, docs: Iterable[str], *, k1: float = K1, b: float = B,
                 analyzer_name: str = DEFAULT_ANALYZER) -> None:
        self.k1, self.b = k1, b
        self.analyzer_name = analyzer_name
        self.analyze = analyzer(analyzer_name)
        self.postings = Postings.build(docs, analyzer_name)
        self.n_docs = self.postings.n_docs

    def scores(self, query: str | Sequence[str]) -> F32:
        """BM25 score of every document (0 where no query term occurs)."""
        terms = self.analyze(query) if isinstance(query, str) else list(query)
        return self.postings.scores(query_stats([self.postings], terms), self.k1, self.b)

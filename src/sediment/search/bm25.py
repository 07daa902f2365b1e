"""Okapi BM25 over chunk content, as a compact inverted index in numpy arrays.

The index is derived data: built from a layer's strings the first time a lexical query
touches that layer, then kept for the life of the process (a server builds it once). The
postings are CSR arrays (term -> documents, term frequencies), so a query costs one
vectorised scatter-add per query term (a term's postings name each document once) instead
of a Python loop over chunks.

Defaults k1 = 0.9, b = 0.4 are Anserini's (Lin et al., tuned on MS MARCO and used by
Pyserini's BM25 baselines): a lower b than Robertson and Zaragoza's textbook 0.75 penalises
length less, which suits short chunks such as memories; on LoCoMo they raise recall@5 of
stemmed BM25 from 0.605 to 0.623 (docs/quality.md). IDF is the non-negative Lucene form
``log(1 + (N - df + 0.5) / (df + 0.5))``. Terms come from an analyzer (``analysis.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from sediment.search.analysis import DEFAULT_ANALYZER, analyzer

K1 = 0.9
B = 0.4

class BM25Index:
    def __init__(self, docs: Iterable[str], *, k1: float = K1, b: float = B,
                 analyzer_name: str = DEFAULT_ANALYZER) -> None:
        self.k1, self.b = k1, b
        self.analyzer_name = analyzer_name
        self.analyze = analyzer(analyzer_name)
        vocab: dict[str, int] = {}
        doc_ids: list[int] = []
        term_ids: list[int] = []
        lengths: list[int] = []
        for d, text in enumerate(docs):
            tokens = self.analyze(text)
            lengths.append(len(tokens))
            counts: dict[int, int] = {}
            for t in tokens:
                tid = vocab.setdefault(t, len(vocab))
                counts[tid] = counts.get(tid, 0) + 1
            for tid, c in counts.items():
                term_ids.append(tid)
                doc_ids.append(d)
                doc_ids.append(c)
        self.vocab = vocab
        self.n_docs = len(lengths)
        self.doc_len = np.asarray(lengths, dtype=np.float32)
        self.avg_len = float(self.doc_len.mean()) if self.n_docs else 0.0
        pairs = np.asarray(doc_ids, dtype=np.int64).reshape(-1, 2)
        terms = np.asarray(term_ids, dtype=np.int64)
        order = np.argsort(terms, kind="stable")
        self.post_docs = pairs[order, 0].astype(np.int32)
        self.post_tf = pairs[order, 1].astype(np.float32)
        counts_per_term = np.bincount(terms, minlength=len(vocab))
        self.offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(counts_per_term, out=self.offsets[1:])
        df = counts_per_term.astype(np.float64)
        self.idf = np.log1p((self.n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)

    def scores(self, query: str | Sequence[str]) -> npt.NDArray[np.float32]:
        """BM25 score of every document (0 where no query term occurs)."""
        terms = self.analyze(query) if isinstance(query, str) else list(query)
        out = np.zeros(self.n_docs, dtype=np.float32)
        if not self.n_docs:
            return out
        norm = self.k1 * (1.0 - self.b + self.b * self.doc_len / max(self.avg_len, 1e-9))
        for t in terms:
            tid = self.vocab.get(t)
            if tid is None:
                continue
            lo, hi = self.offsets[tid], self.offsets[tid + 1]
            docs, tf = self.post_docs[lo:hi], self.post_tf[lo:hi]
            contrib = self.idf[tid] * tf * (self.k1 + 1.0) / (tf + norm[docs])
            out[docs] += contrib
        return out

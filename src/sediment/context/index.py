"""The hybrid relevance of context items, kept up to date as items are appended.

Plain search (``sediment.search``) derives its BM25 postings per layer file, so after each
write (a new file) the next query re-analyses every chunk of the active file, events
included: hundreds of milliseconds at 5,000 items, every iteration of a loop. This index
scores the same way from the same parts (the ``english`` analyzer and BM25 constants,
the candidate pool of each retriever's best ``max(5k, 50)``, the default convex fusion),
over the items only, and follows appends instead of rebuilding: postings are kept in
segments (``search.bm25.Postings``, statistics summed over them as over layers), a new
segment per batch of appended items, the last two merged while the older is at most twice
the newer (so there are O(log n) segments and each item is re-analysed O(log n) times).
A compaction (archive, drop), which rewrites the list, rebuilds it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from sediment.context.store import StoredItem
from sediment.search import BM25Params, ConvexFusion
from sediment.search.analysis import analyzer
from sediment.search.bm25 import Postings, query_stats
from sediment.search.ranking import Candidates, fuse_pool
from sediment.search.vector import top_k

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
A = TypeVar("A", F32, I64)


@dataclass(frozen=True, slots=True)
class Scored:
    """The candidate pool of one query: positions in the index, best first, with the
    fused relevance (orders only) and each retriever's raw score (NaN / 0: none)."""

    pos: I64
    fused: F32
    cosine: F32
    lexical: F32


def _grown(buf: A, n: int, end: int) -> A:
    """``buf`` with room for ``end`` rows, its first ``n`` kept: grown by a quarter at
    least, so that appends rarely copy."""
    if end <= len(buf):
        return buf
    bigger = np.zeros((max(end + 1024, len(buf) * 5 // 4), *buf.shape[1:]), dtype=buf.dtype)
    bigger[:n] = buf[:n]
    return bigger


class ItemIndex:
    """Vectors, BM25 postings and integer labels (the item's id, then what the ``label`` of
    :meth:`sync` gives, fixed when the item is added) of a list of items that grows at its
    end."""

    def __init__(self, dim: int, params: BM25Params | None = None, labels: int = 0) -> None:
        self.params = params or BM25Params()
        self.dim = dim
        self.items: list[StoredItem] = []
        self._texts: list[str] = []
        self._buffer: F32 = np.zeros((0, dim), dtype=np.float32)
        self._labels: I64 = np.zeros((0, 1 + labels), dtype=np.int64)
        self._segments: list[Postings] = []

    def __len__(self) -> int:
        return len(self.items)

    @property
    def ids(self) -> I64:
        return self._labels[:len(self.items), 0]

    def labels(self, j: int) -> I64:
        """Each item's label ``j`` (0-based, of those ``label`` gave)."""
        return self._labels[:len(self.items), 1 + j]

    def sync(self, items: Sequence[StoredItem],
             label: Callable[[StoredItem], Sequence[int]] | None = None) -> None:
        """Follow ``items``: add what was appended since the last call, or start over when
        the list was rewritten (it no longer starts with what the index holds)."""
        n = len(self.items)
        if not (n <= len(items) and (n == 0 or items[n - 1].chunk.id == self.items[-1].chunk.id)
                and (n == 0 or items[0].chunk.id == self.items[0].chunk.id)):
            self.__init__(self.dim, self.params,  # type: ignore[misc]
                          self._labels.shape[1] - 1)
            n = 0
        new = items[n:]
        if not new:
            return
        self.items.extend(new)
        texts = [i.chunk.content for i in new]
        self._texts.extend(texts)
        end = n + len(new)
        self._buffer = _grown(self._buffer, n, end)
        self._labels = _grown(self._labels, n, end)
        for r, it in enumerate(new, n):
            v = np.asarray(it.vector, dtype=np.float32).reshape(-1)
            self._buffer[r] = v if len(v) == self.dim else 0.0
            self._labels[r] = (it.chunk.id, *(label(it) if label is not None else ()))
        self._segments.append(Postings.build(texts, self.params.analyzer))
        while (len(self._segments) >= 2
               and self._segments[-2].n_docs <= 2 * self._segments[-1].n_docs):
            last = self._segments.pop()
            prev = self._segments.pop()
            end = len(self._texts)
            start = end - last.n_docs - prev.n_docs
            self._segments.append(Postings.build(self._texts[start:end], self.params.analyzer))

    def search(self, text: str, vector: F32 | None, allowed: Mask, k: int,
               extra: I64 | None = None) -> Scored:
        """The pool of ``k`` over the ``allowed`` positions, as plain search builds it:
        each retriever's best ``max(5k, 50)``, fused by the default convex fusion; then
        the ``extra`` positions (allowed ones) not among them, scored the same way."""
        n = len(self.items)
        pos, fused = np.zeros(0, np.int64), np.zeros(0, np.float32)
        if n == 0 or not allowed.any():
            return Scored(pos, fused, fused, fused)
        vec = np.full(n, np.nan, dtype=np.float32)
        lex = self._bm25(text)
        lex = lex if lex is not None else np.zeros(n, dtype=np.float32)
        c = max(5 * k, 50)
        pools: list[I64] = []
        if vector is not None and len(vector) == self.dim:
            vec = (self._buffer[:n] @ np.asarray(vector, dtype=np.float32)).astype(np.float32)
            pools.append(top_k(np.where(allowed, vec, -np.inf).astype(np.float32), c))
        ok = (lex > 0) & allowed
        if ok.any():
            pools.append(top_k(np.where(ok, lex, -np.inf).astype(np.float32), c))
        if pools:
            pool = np.unique(np.concatenate(pools)).astype(np.int64)
            pool = pool[allowed[pool]]
            n = len(pool)
            best, fused_all, _, _ = fuse_pool(
                Candidates(self.ids[pool], np.zeros(n, np.int64), pool, vec[pool], lex[pool],
                           np.zeros(n, np.bool_)),
                mode="hybrid", fusion=ConvexFusion(), has_vector=True)
            pos, fused = pool[best[:k]], fused_all[best[:k]]
        if extra is not None and len(extra):
            more = np.setdiff1d(np.asarray(extra, dtype=np.int64), pos)
            more = more[allowed[more]]
            pos = np.concatenate([pos, more])
            fused = np.concatenate([fused, np.zeros(len(more), np.float32)])
        return Scored(pos, fused, vec[pos], lex[pos])

    def _bm25(self, text: str) -> F32 | None:
        terms = analyzer(self.params.analyzer)(text)
        if not terms or not self._segments:
            return None
        stats = query_stats(self._segments, terms)
        return np.concatenate([s.scores(stats, self.params.k1, self.params.b)
                               for s in self._segments])

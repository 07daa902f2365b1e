"""Derived per-file search data, built on first use and dropped with the file.

Kind names, row norms, BM25 postings (one per analyzer, from the layer's lexicon file when
one matches, see ``lexicon.py``), the id -> position map, and the approximate index when
the layer is large enough to have one. Held in the one per-file cache
(``store.derived``), which keeps it exactly as long as the file is open: it refers to its
file weakly, so the cache entry cannot keep the file (and its memory map) alive.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

import numpy as np
import numpy.typing as npt

from sediment.format import LayerFile
from sediment.format.arrays import distinct
from sediment.search import ann, lexicon
from sediment.search.bm25 import Excluded, PostingsStack
from sediment.search.vector import F32, Metric, cosine, dot_scores, row_norms, top_k
from sediment.store.derived import derived
from sediment.store.ids import U32_MAX
from sediment.store.rules import counted_in_statistics, shown_kind

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
MASK_CACHE = 8
"""Kind-filter masks kept per layer file (one byte per chunk each)."""


class LayerIndex:
    def __init__(self, f: LayerFile) -> None:
        self._file = weakref.ref(f)
        self._kind_names: dict[int, str] | None = None
        self._masks: dict[tuple[tuple[str, ...] | None, bool], Mask | None] = {}
        self._hidden_masks: dict[tuple[tuple[str, ...] | None, bool, frozenset[int]],
                                 Mask | None] = {}
        self._norms: F32 | None = None
        self._postings: dict[str, PostingsStack] = {}
        self._excluded: dict[str, Excluded | None] = {}
        self._lex_keys: lexicon.Keys = {}
        self._sorted: tuple[npt.NDArray[np.uint32], I64 | None] | None = None
        self._row_pos: I64 | None = None
        self._lock = threading.Lock()
        self._lexical_lock = threading.Lock()
        self._identity_rows: bool | None = None
        self._ann_keys: dict[int, str] = {}
        self._ann_listing: tuple[str, ...] | None = None
        self._ann: ann.AnnIndex | None = None
        self._scanned_s = 0.0
        """Estimated seconds of the exact scans of this file so far (the rent paid)."""

    @property
    def file(self) -> LayerFile:
        f = self._file()
        if f is None:  # only reachable through an index kept without its file
            raise ReferenceError("the layer file of this index was closed")
        return f

    # -- filters -------------------------------------------------------------------------
    def kind_names(self) -> dict[int, str]:
        if self._kind_names is None:
            sids = distinct(self.file.records["kind"])
            self._kind_names = {int(s): self.file.string(int(s)) for s in sids.tolist()}
        return self._kind_names

    def kind_mask(self, kinds: Sequence[str] | None, include_meta: bool) -> Mask | None:
        """Chunks allowed by the kind filter (None: all allowed); the last few masks are
        kept, as a server repeats the same filter and each costs a pass over the table."""
        key = (tuple(kinds) if kinds else None, include_meta)
        try:  # one lookup: another thread may evict between a test and a read
            return self._masks[key]
        except KeyError:
            pass
        names = self.kind_names()
        mask: Mask | None = None
        if kinds:
            wanted = set(kinds)
            allowed = [s for s, n in names.items() if n in wanted]
            mask = np.isin(self.file.records["kind"], np.asarray(allowed, dtype=np.uint32))
        elif not all(shown_kind(n, include_meta) for n in names.values()):
            allowed = [s for s, n in names.items() if shown_kind(n, include_meta)]
            mask = np.isin(self.file.records["kind"], np.asarray(allowed, dtype=np.uint32))
        with self._lock:
            if len(self._masks) >= MASK_CACHE:
                self._masks.pop(next(iter(self._masks)))
            self._masks[key] = mask
        return mask

    def search_mask(self, kinds: Sequence[str] | None, include_meta: bool,
                    hidden: AbstractSet[int]) -> Mask | None:
        """The kind filter less the chunks whose ids are hidden (superseded, forgotten,
        another actor's), so that hidden chunks take no candidate slot: with the filter
        applied after the per-layer top, an actor's own note ranked below another
        actor's many private ones was never a candidate. Kept per hidden set, which the
        store hands out once per state of its layers and reader."""
        mask = self.kind_mask(kinds, include_meta)
        if not hidden:
            return mask
        frozen = hidden if isinstance(hidden, frozenset) else frozenset(hidden)
        key = (tuple(kinds) if kinds else None, include_meta, frozen)
        try:
            return self._hidden_masks[key]
        except KeyError:
            pass
        wide = np.fromiter(frozen, dtype=np.int64, count=len(frozen))
        ids: npt.NDArray[np.uint32] = wide[(wide >= 0) & (wide <= U32_MAX)].astype(np.uint32)
        pos = self.positions(ids)
        pos = pos[pos >= 0]
        out = mask
        if len(pos):
            out = np.ones(self.file.chunk_count, dtype=np.bool_) if mask is None else mask.copy()
            out[pos] = False
        with self._lock:
            if len(self._hidden_masks) >= MASK_CACHE:
                self._hidden_masks.pop(next(iter(self._hidden_masks)))
            self._hidden_masks[key] = out
        return out

    # -- vectors ---------------------------------------------------------------------------
    def identity_rows(self) -> bool:
        if self._identity_rows is None:
            rows = self.file.rows
            self._identity_rows = bool(
                len(rows) == self.file.embedding_info.rows
                and np.array_equal(rows, np.arange(len(rows))))
        return self._identity_rows

    def _cosine(self, scores: F32, rows: I64 | slice | None, q: F32) -> F32:
        if self._norms is None:
            self._norms = row_norms(self.file.embeddings, self.file.quant_scale)
        return cosine(scores, self._norms if rows is None else self._norms[rows], q)

    def vector_scores(self, q: F32, metric: Metric, normalised: bool) -> F32:
        """The score of every chunk, in chunk-table order (an exact scan)."""
        f = self.file
        scores = dot_scores(f.embeddings, q, f.quant_scale)
        self._scanned_s += ann.scan_cost(f)
        if metric == "cosine" and not normalised:
            scores = self._cosine(scores, None, q)
        if not self.identity_rows():
            scores = scores[f.rows]
        return scores

    def score_positions(self, positions: I64, q: F32, metric: Metric,
                        normalised: bool) -> F32:
        """Exact scores of a few chunks (by chunk-table position)."""
        f = self.file
        rows = positions if self.identity_rows() else f.rows[positions]
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float32)
        scores = dot_scores(f.embeddings[rows], q, f.quant_scale)
        if metric == "cosine" and not normalised:
            scores = self._cosine(scores, rows, q)
        return scores

    # -- approximate -------------------------------------------------------------------------
    def ann_index(self, *, now: bool = False) -> ann.AnnIndex | None:
        """The layer's approximate index if it is large enough and one covers all of its
        rows or a prefix of them, and this process has paid its rent (see ``ann.index``:
        until the exact scans of this file have cost about what opening the index costs,
        None; ``now`` opens it regardless, for a server warming up).

        Looked up again only when the index files beside the layer change (a directory
        listing, tens of microseconds, against the milliseconds of the scan it saves), so
        a running server picks up ``sediment index build`` without a restart; row hashes
        are computed once per file version and prefix length.
        """
        f = self.file
        if f.path is None or not ann.eligible(f.embedding_info.rows):
            return None
        current = self._ann
        if current is not None and current.rows == f.embedding_info.rows:
            return current
        found, _ = ann.index_files(f.path)
        listing = tuple(x.path.name for x in found)
        if listing == self._ann_listing:
            return current
        if not now and not self._rent_paid(found):
            return None
        with self._lock:
            self._ann = ann.find_index(f, self._ann_keys)
            self._ann_listing = listing
        return self._ann

    def _rent_paid(self, found: Sequence[ann.IndexFile]) -> bool:
        """Whether this process has scanned ``found``'s layer exactly for about as long
        as opening the largest index that could serve it would take."""
        f = self.file
        usable = [x for x in found if 0 < x.rows <= f.embedding_info.rows]
        if not usable:
            return True  # nothing to open: looking costs a listing, no FAISS
        try:
            size = max(x.path.stat().st_size for x in usable)
        except OSError:
            return True  # changed under us: let the lookup decide, and log it
        return ann.rent_paid(f, self._scanned_s, size)

    def tail_rows(self, q: F32, start: int, count: int, metric: Metric,
                  normalised: bool) -> I64:
        """The ``count`` best embedding rows from ``start`` on, by exact score: the rows
        appended after the approximate index was built."""
        f = self.file
        scores = dot_scores(f.embeddings[start:], q, f.quant_scale)
        if metric == "cosine" and not normalised:
            scores = self._cosine(scores, slice(start, None), q)
        return top_k(scores, count) + start

    def positions_of_rows(self, rows: I64) -> I64:
        """Chunk-table position of each embedding row (-1 for rows no chunk uses)."""
        if self.identity_rows():
            return rows
        if self._row_pos is None:
            inv = np.full(self.file.embedding_info.rows, -1, dtype=np.int64)
            inv[self.file.rows] = np.arange(self.file.chunk_count, dtype=np.int64)
            self._row_pos = inv
        return self._row_pos[rows]

    # -- lexical -------------------------------------------------------------------------------
    def postings(self, analyzer_name: str) -> PostingsStack:
        """The layer's postings for ``analyzer_name``: mapped from its lexicon file (with
        the chunks appended after it analysed in memory), or built (and persisted when the
        layer is large) on first use."""
        with self._lexical_lock:  # one build; other threads wait for it, not beside it
            found = self._postings.get(analyzer_name)
            if found is None:
                found = self._postings[analyzer_name] = lexicon.load_postings(
                    self.file, analyzer_name, self._lex_keys)
            return found

    def excluded(self, analyzer_name: str) -> Excluded | None:
        """The layer's chunks a general search's BM25 statistics leave out (events and
        memories: ``sediment.store.rules.counted_in_statistics``), None when it holds
        none."""
        if analyzer_name not in self._excluded:
            names = [n for n in self.kind_names().values() if not counted_in_statistics(n)]
            found = None
            if names:
                mask = self.kind_mask(names, True)
                if mask is not None and mask.any():
                    found = Excluded(self.postings(analyzer_name), mask)
            self._excluded[analyzer_name] = found
        return self._excluded[analyzer_name]

    # -- ids -------------------------------------------------------------------------------------
    def positions(self, ids: npt.NDArray[np.uint32]) -> I64:
        """Chunk-table position of each id, or -1 when this file lacks it."""
        if self._sorted is None:
            all_ids = self.file.ids
            if len(all_ids) < 2 or bool(np.all(all_ids[1:] > all_ids[:-1])):
                self._sorted = (all_ids, None)
            else:
                order = np.argsort(all_ids, kind="stable")
                self._sorted = (all_ids[order], order.astype(np.int64))
        sorted_ids, order_or_none = self._sorted
        if len(sorted_ids) == 0:
            return np.full(len(ids), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1).astype(np.int64)
        found = sorted_ids[pos] == ids
        result = pos if order_or_none is None else order_or_none[pos]
        return np.where(found, result, -1).astype(np.int64)


def layer_index(f: LayerFile) -> LayerIndex:
    return derived(f, LayerIndex, LayerIndex)

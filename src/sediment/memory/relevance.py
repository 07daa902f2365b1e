"""How relevant a memory is to a recall query, on one absolute scale, and the floor.

General search fuses cosine and BM25 after normalising each over the candidate pool, so its
best hit always scores about 1.0, whatever it is; an agent cannot tell "nothing relevant"
from an answer by that. Recall scores each memory on its own instead:
``(1 - LEXICAL_WEIGHT) * max(cosine, 0) + LEXICAL_WEIGHT * bm25 / (bm25 + LEXICAL_HALF)``.
Both parts are fixed functions of the memory's raw scores (BM25 saturates, reaching half
its weight at ``LEXICAL_HALF``), so a score means the same in every query and store, and
results under the floor are left out. What passes is still ordered by the search engine's
hybrid ranking (pool-normalised), which finds more than ordering by this score does
(LoCoMo recall@5: docs/memory.md, "The recall floor"). The constants were measured with
``python -m bench.memory_floor``.

A correction outranks a fact it contradicts: when a memory saved as a correction (category
``correction``, source ``corrected``, or a supersession flagged as a correction) and an
older memory it speaks about both match, the correction is scored just above it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from sediment.memory.correction import content_words
from sediment.memory.model import Memory
from sediment.search.fusion import ConvexFusion, Pool

LEXICAL_WEIGHT = 0.5
LEXICAL_HALF = 32.0
DEFAULT_MIN_SCORE = 0.2
"""The floor with the default embedder (MiniLM), and with any embedder not listed below."""
MIN_SCORES = {"sediment-hash-v1": 0.1}
"""Floors of embedders whose cosines sit on another scale (the hash embedder of the tests
and offline runs: relevant memories 0.18 and up, unrelated 0.08 and under)."""
CORRECTION_OVERLAP = 0.5
"""The share of the older memory's content words a correction must repeat to be about it."""


def relevance(cosine: float, bm25: float, *, half: float = LEXICAL_HALF,
              weight: float = LEXICAL_WEIGHT) -> float:
    """A memory's absolute relevance, 0 to 1, from its raw cosine and BM25 (``half`` and
    ``weight`` are there for the benchmark that chose them)."""
    lexical = bm25 / (bm25 + half) if bm25 > 0 else 0.0
    return (1.0 - weight) * max(cosine, 0.0) + weight * lexical


def fuse(cosines: npt.ArrayLike, bm25: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Hybrid relevance of each candidate of one pool: the search engine's convex fusion
    (it reads scores, not ranks), so the matches of several stores, or of a store that
    ranks by itself, order as general search would order them."""
    vec, lex = np.asarray(cosines, dtype=np.float32), np.asarray(bm25, dtype=np.float32)
    unranked = np.zeros(len(vec), dtype=np.int64)
    return ConvexFusion().combine(Pool(vec, lex, unranked, unranked))


def default_min_score(model: str) -> float:
    """The floor for memories embedded by ``model``."""
    return MIN_SCORES.get(model, DEFAULT_MIN_SCORE)


def corrects(correction: str, older: str) -> bool:
    """Whether ``correction`` speaks about the fact ``older`` states: it repeats at least
    ``CORRECTION_OVERLAP`` of that fact's content words ("Actually my dog is Rex, not Max"
    repeats "dog" and "max" of "The user's dog is named Max")."""
    words = content_words(older)
    if not words:
        return False
    return len(words & content_words(correction)) >= CORRECTION_OVERLAP * len(words)


def corrections_first(found: Sequence[Memory], flagged: set[int]) -> None:
    """Place each correction just above every older, non-correction memory in ``found``
    it corrects, in order (``rank``) and score (``flagged``: indexes of memories flagged
    as corrections)."""
    marks = [i in flagged or m.category == "correction" or m.source == "corrected"
             for i, m in enumerate(found)]
    for i, fix in enumerate(found):
        if not marks[i]:
            continue
        for j, old in enumerate(found):
            if marks[j] or old.created_at_ms > fix.created_at_ms or old.rank < fix.rank:
                continue
            if corrects(fix.content, old.content):
                fix.rank = old.rank + 1e-5
                fix.score = max(fix.score or 0.0, (old.score or 0.0) + 1e-5)

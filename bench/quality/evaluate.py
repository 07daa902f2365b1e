"""Search every question in each mode and score the rankings against the evidence."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from bench.quality.metrics import Scores
from sediment.embed import Embedder
from sediment.ops import run_search
from sediment.search import SearchRequest
from sediment.store import LayerSet

DEPTH = 20
"""Results read per question: enough for recall@20."""

MODES = ("lexical", "vector", "hybrid")
LABELS = {"lexical": "BM25 alone", "vector": "embedder alone", "hybrid": "Sediment hybrid"}


@dataclass(slots=True)
class ModeResult:
    overall: Scores = field(default_factory=Scores)
    by_group: dict[str, Scores] = field(default_factory=dict)
    seconds: float = 0.0
    queries: int = 0

    def add(self, group: str, ranked: Sequence[str], relevant: frozenset[str]) -> None:
        self.overall.add(ranked, relevant)
        self.by_group.setdefault(group, Scores()).add(ranked, relevant)


Labeller = Callable[[LayerSet, int], str | None]
"""Maps a hit (layer set, chunk id) to the label the evidence uses (None: irrelevant)."""


def run_questions(layerset: LayerSet, embedder: Embedder,
                  questions: Sequence[tuple[str, str, frozenset[str]]],
                  label: Mapping[int, str] | Callable[[int], str | None],
                  base: SearchRequest, results: dict[str, ModeResult],
                  modes: Sequence[str] = MODES) -> None:
    """Search each ``(text, group, evidence)`` in every mode; add the scores to ``results``."""
    lookup = label.get if isinstance(label, Mapping) else label
    for text, group, evidence in questions:
        embedder.embed([text])  # warm the cache so timings measure search, not the model
        for mode in modes:
            request = replace(base, text=text, k=DEPTH, mode=mode)  # type: ignore[arg-type]
            t = time.perf_counter()
            hits = run_search(layerset, request, embedder=embedder).hits
            res = results.setdefault(mode, ModeResult())
            res.seconds += time.perf_counter() - t
            res.queries += 1
            ranked = [lab for h in hits if (lab := lookup(h.chunk.id)) is not None]
            res.add(group, ranked, evidence)

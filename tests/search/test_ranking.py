"""The ranking core (``search.ranking.rank``) on its own: a pool and a table of versions in,
hits out. Each test pins one rule both backends rely on; the backends' own tests (the
engine's paths, PostgreSQL parity in tests/contract) show they reach it."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from sediment.format import Chunk
from sediment.search import SearchRequest
from sediment.search.hits import Hit
from sediment.search.ranking import Candidates, default_candidates, rank
from sediment.store import PRECEDENCE, LayerName

BASE, DELTA, USER, LOCAL = LayerName.BASE, LayerName.DELTA, LayerName.USER, LayerName.LOCAL


class Table:
    """Versions held in a dict: ``(layer, id) -> chunk``, and a vector score per version."""

    def __init__(self, chunks: dict[tuple[LayerName, int], Chunk],
                 vector: dict[tuple[LayerName, int], float] | None = None) -> None:
        self.chunks, self.vector = chunks, vector or {}
        self.read: list[int] = []

    def of(self, ids: np.ndarray) -> Iterator[list[tuple[LayerName, int]]]:
        for cid in ids.tolist():
            self.read.append(cid)
            yield [(n, cid) for n in PRECEDENCE if (n, cid) in self.chunks]

    def kind(self, layer: LayerName, version: int) -> str:
        return self.chunks[(layer, version)].kind

    def chunk(self, layer: LayerName, version: int) -> Chunk:
        return self.chunks[(layer, version)]

    def vector_score(self, layer: LayerName, version: int) -> float:
        return self.vector[(layer, version)]


def note(cid: int, content: str, kind: str = "note") -> Chunk:
    return Chunk(cid, kind, content, "human", 1.0, 0)


def pool(*entries: tuple[int, LayerName, float, float]) -> Candidates:
    """Candidates from ``(id, layer, cosine, bm25)``; NaN cosine: not scored."""
    return Candidates(
        np.asarray([e[0] for e in entries], dtype=np.int64),
        np.asarray([e[1].rank for e in entries], dtype=np.int64),
        np.arange(len(entries), dtype=np.int64),
        np.asarray([e[2] for e in entries], dtype=np.float32),
        np.asarray([e[3] for e in entries], dtype=np.float32),
        np.asarray([e[1] is LOCAL for e in entries], dtype=np.bool_))


def vector_search(table: Table, candidates: Candidates, hidden: frozenset[int] = frozenset(),
                  **req: object) -> list[Hit]:
    request = SearchRequest(mode="vector", **req)  # type: ignore[arg-type]
    return rank(candidates, table, request, hidden, has_vector=True)


def test_the_highest_layer_is_shown_and_ranked_by_the_best_matching_version() -> None:
    table = Table({(BASE, 1): note(1, "base words"), (LOCAL, 1): note(1, "local rewording"),
                   (BASE, 2): note(2, "two")}, {(LOCAL, 1): 0.25})
    hits = vector_search(table, pool((1, BASE, 0.9, 0), (1, LOCAL, 0.25, 0), (2, BASE, 0.5, 0)))
    assert [h.id for h in hits] == [1, 2]
    top = hits[0]
    assert (top.layer, top.chunk.content, top.matched_layer) == (LOCAL, "local rewording", BASE)
    assert top.score == np.float32(0.9)
    assert top.vector_score == 0.25  # the shown version's own score, not the base's
    assert [(h.layer, h.chunk.content) for h in top.hidden] == [(BASE, "base words")]
    assert hits[1].hidden == [] and hits[1].vector_score == np.float32(0.5)


def test_a_shadowed_version_is_a_conflict_only_when_content_or_kind_differs() -> None:
    table = Table({(BASE, 1): note(1, "same"), (DELTA, 1): note(1, "same"),
                   (USER, 1): note(1, "same", "decision"), (LOCAL, 1): note(1, "same")},
                  {(LOCAL, 1): 0.5})
    hits = vector_search(table, pool((1, BASE, 0.5, 0)))
    assert [(h.layer, h.conflict) for h in hits[0].hidden] == [
        (USER, True), (DELTA, False), (BASE, False)]
    table.chunks[(DELTA, 1)] = note(1, "reworded")
    hits = vector_search(table, pool((1, BASE, 0.5, 0)))
    assert [(h.layer, h.conflict) for h in hits[0].hidden] == [
        (USER, True), (DELTA, True), (BASE, False)]


def test_the_kind_filter_reads_the_shown_version_not_the_matched_one() -> None:
    table = Table({(BASE, 1): note(1, "a"), (LOCAL, 1): note(1, "b", "decision"),
                   (BASE, 2): note(2, "c")}, {(LOCAL, 1): 0.1})
    both = pool((1, BASE, 0.9, 0), (2, BASE, 0.5, 0))
    assert [h.id for h in vector_search(table, both, kinds=("note",))] == [2]
    assert [h.id for h in vector_search(table, both, kinds=("decision",))] == [1]
    table.chunks[(LOCAL, 1)] = note(1, "event", "meta.write")
    assert [h.id for h in vector_search(table, both)] == [2]
    assert [h.id for h in vector_search(table, both, include_meta=True)] == [1, 2]
    table.chunks[(LOCAL, 1)] = note(1, "private", "memory.fact.alice")
    assert [h.id for h in vector_search(table, both, include_meta=True)] == [2]


def test_hidden_ids_are_dropped_without_using_a_place() -> None:
    table = Table({(BASE, i): note(i, str(i)) for i in (1, 2, 3)})
    candidates = pool((1, BASE, 0.9, 0), (2, BASE, 0.8, 0), (3, BASE, 0.7, 0))
    assert [h.id for h in vector_search(table, candidates, frozenset({1}), k=2)] == [2, 3]


def test_ranking_stops_at_k_unless_rerankers_will_reorder() -> None:
    table = Table({(BASE, i): note(i, str(i)) for i in range(1, 6)})
    candidates = pool(*[(i, BASE, 1.0 - i / 10, 0.0) for i in range(1, 6)])
    assert [h.id for h in vector_search(table, candidates, k=2)] == [1, 2]
    assert table.read == [1, 2]  # versions are read only as far as the hits go
    kept = vector_search(table, candidates, k=2, rerankers=(lambda hits: hits,))
    assert [h.id for h in kept] == [1, 2, 3, 4, 5]


def test_an_id_without_a_version_in_the_layers_searched_is_skipped() -> None:
    table = Table({(BASE, 2): note(2, "two")})
    assert [h.id for h in vector_search(table, pool((1, BASE, 0.9, 0), (2, BASE, 0.1, 0)))
            ] == [2]


def test_hybrid_and_lexical_hits_carry_both_sides_and_their_ranks() -> None:
    table = Table({(BASE, 1): note(1, "one"), (LOCAL, 2): note(2, "two")})
    candidates = pool((1, BASE, 0.9, 0.0), (2, LOCAL, 0.1, 3.0))
    hybrid = rank(candidates, table, SearchRequest(text="x", mode="hybrid"), frozenset(),
                  has_vector=True)
    assert [(h.id, h.vector_rank, h.lexical_rank, h.lexical_score, h.approximate)
            for h in hybrid] == [(2, 2, 1, 3.0, True), (1, 1, None, None, False)]
    words = pool((1, BASE, float("nan"), 0.0), (2, LOCAL, float("nan"), 3.0))
    lexical = rank(words, table, SearchRequest(text="x", mode="lexical"), frozenset(),
                   has_vector=False)
    assert [(h.id, h.score, h.vector_score, h.lexical_rank) for h in lexical] == [
        (2, 3.0, None, 1)]


def test_the_default_pool_is_deeper_for_fusion() -> None:
    assert default_candidates("hybrid", 10) == 50
    assert default_candidates("hybrid", 20) == 100
    assert default_candidates("vector", 10) == 20
    assert default_candidates("lexical", 30) == 60

"""The search pipeline on real layer files: retrieval, fusion, filters, precedence, explain."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.embed import HashEmbedder
from sediment.errors import SchemaMismatchError, ValidationError
from sediment.format import Chunk, encode_layer
from sediment.ops import WriteRequest, run_search, write_context
from sediment.ops.requests import SearchParams, parse
from sediment.search import (
    ANALYZERS,
    DEFAULT_ANALYZER,
    BM25Index,
    Pool,
    ReciprocalRankFusion,
    SearchRequest,
    WeightedFusion,
    search,
    vector,
)
from sediment.search.vector import dot_scores, top_k
from sediment.store import LayerName, LayerSet, NewChunk

EMB = HashEmbedder(dim=64)

DOCS = [
    ("canonical", "The deploy script pushes containers to the staging cluster every night."),
    ("canonical", "Database migrations run with alembic before the web server starts."),
    ("invariant", "Requests to /billing MUST include the X-Account header."),
    ("canonical", "The frontend is built with Vite and tested with Vitest."),
    ("decision", "We chose PostgreSQL over MySQL for its JSON support."),
    ("meta.proposal_event", "proposal for chunk 3 to user"),
]


def build(tmp_path: Path, etype: str = "f32") -> LayerSet:
    chunks = [Chunk(i, kind, text, "human", 1.0, 0, (f"docs/a.md:{i}",))
              for i, (kind, text) in enumerate(DOCS, 1)]
    vecs = EMB.embed([c.content for c in chunks])
    md = {"v": 1, "embedding_profile": EMB.profile.to_dict()}
    (tmp_path / "AGENTS.db").write_bytes(encode_layer(chunks, vecs, element_type=etype,
                                                      metadata=md))
    return LayerSet.from_directory(tmp_path)


def ask(ls: LayerSet, text: str, **kw: object) -> list[tuple[str, int]]:
    res = run_search(ls, SearchRequest(text=text, **kw), embedder=EMB)  # type: ignore[arg-type]
    return [(h.layer.value, h.chunk.id) for h in res.hits]


@pytest.mark.parametrize("etype", ["f32", "i8"])
@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
def test_finds_the_relevant_chunk(tmp_path: Path, etype: str, mode: str) -> None:
    ls = build(tmp_path, etype)
    assert ask(ls, "database migrations alembic", mode=mode)[0] == ("base", 2)
    assert ask(ls, "billing header", mode=mode)[0] == ("base", 3)


def test_meta_chunks_hidden_unless_asked(tmp_path: Path) -> None:
    ls = build(tmp_path)
    assert all(cid != 6 for _, cid in ask(ls, "proposal for chunk", k=10))
    assert ask(ls, "proposal for chunk", kinds=("meta.proposal_event",)) == [("base", 6)]
    assert (("base", 6) in ask(ls, "proposal for chunk", include_meta=True))


def test_kind_filter(tmp_path: Path) -> None:
    ls = build(tmp_path)
    hits = ask(ls, "database", kinds=("decision", "invariant"), k=10)
    assert {cid for _, cid in hits} <= {3, 5} and hits


def test_local_overrides_base_and_reports_the_conflict(tmp_path: Path) -> None:
    ls = build(tmp_path)
    text = "Database migrations now run with sqitch, not alembic."
    ls.append(LayerName.LOCAL, [NewChunk("canonical", text, "mcp", 0.8, id=2)],
              EMB.embed([text]), profile=EMB.profile.to_dict())
    res = run_search(ls, SearchRequest(text="database migrations", k=3), embedder=EMB)
    top = res.hits[0]
    assert (top.layer, top.chunk.id, top.chunk.content) == (LayerName.LOCAL, 2, text)
    assert [(h.layer, h.chunk.id, h.conflict) for h in top.hidden] == [
        (LayerName.BASE, 2, True)]
    assert sum(1 for h in res.hits if h.chunk.id == 2) == 1
    only_base = run_search(ls, SearchRequest(text="database migrations", k=3,
                                             layers=(LayerName.BASE,)), embedder=EMB)
    assert only_base.hits[0].layer is LayerName.BASE and not only_base.hits[0].hidden


def test_override_found_through_the_words_of_the_version_it_hides(tmp_path: Path) -> None:
    ls = build(tmp_path)
    text = "Deprecated: see the runbook."
    ls.append(LayerName.USER, [NewChunk("canonical", text, "human", 1.0, id=4)],
              EMB.embed([text]), profile=EMB.profile.to_dict(),
              allowed=(LayerName.USER,))
    res = run_search(ls, SearchRequest(text="Vite Vitest frontend", k=1), embedder=EMB)
    hit = res.hits[0]
    assert (hit.layer, hit.chunk.content, hit.matched_layer) == (
        LayerName.USER, text, LayerName.BASE)
    assert hit.explanation()["hidden_versions"] == ["base:4"]


def test_explain_has_every_part(tmp_path: Path) -> None:
    ls = build(tmp_path)
    res = run_search(ls, SearchRequest(text="alembic migrations", k=2), embedder=EMB)
    e = res.hits[0].explanation()
    assert e["vector_rank"] == 1 and e["bm25_rank"] == 1
    assert e["fused_score"] == pytest.approx(1.0)  # best on both sides of the pool
    assert e["approximate"] is False
    rrf = run_search(ls, SearchRequest(text="alembic migrations", k=2,
                                       fusion=ReciprocalRankFusion()), embedder=EMB)
    assert rrf.hits[0].explanation()["fused_score"] == pytest.approx(2 / 61)
    assert e["vector_score"] > 0 and e["bm25_score"] > 0 and e["layer"] == "base"


def test_query_vector_instead_of_text(tmp_path: Path) -> None:
    ls = build(tmp_path)
    q = EMB.embed([DOCS[4][1]])[0]
    res = run_search(ls, SearchRequest(k=1, mode="vector"), query_vec=q.tolist())
    assert res.hits[0].chunk.id == 5
    assert res.hits[0].vector_score == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValidationError, match="dims"):
        run_search(ls, SearchRequest(k=1, mode="vector"), query_vec=[1.0, 2.0])


def test_profile_mismatch_for_text_query(tmp_path: Path) -> None:
    ls = build(tmp_path)
    with pytest.raises(SchemaMismatchError, match="active embedder"):
        run_search(ls, SearchRequest(text="x"), embedder=HashEmbedder(dim=32))
    # lexical search needs no embedder at all
    assert run_search(ls, SearchRequest(text="alembic", mode="lexical")).hits[0].chunk.id == 2


@pytest.mark.parametrize("bad", [0, -1, 1001, True, 2.5, "3"])
def test_k_is_validated(bad: object) -> None:
    with pytest.raises(ValidationError, match=r"^k: "):
        parse(SearchParams, {"query": "x", "k": bad})


def test_written_chunk_is_found(tmp_path: Path) -> None:
    ls = build(tmp_path)
    new_id = write_context(ls, EMB, WriteRequest(
        content="The cache layer evicts entries after ten minutes.", kind="derived-summary",
        confidence=0.7, sources=["docs/cache.md:3", 1], scope="local"), actor="tester")
    res = run_search(ls, SearchRequest(text="cache eviction minutes", k=1), embedder=EMB)
    assert (res.hits[0].layer, res.hits[0].chunk.id) == (LayerName.LOCAL, new_id)
    assert res.hits[0].chunk.author == "mcp"
    assert res.hits[0].chunk.sources == ("docs/cache.md:3", 1)


@pytest.mark.parametrize("field,value,message", [
    ("scope", "base", "not writable"), ("scope", "user", "not writable"),
    ("scope", "nope", "exactly one of"), ("scope", "LOCAL", "exactly one of"),
    ("confidence", 1.5, "at most 1.0"), ("confidence", "high", "number"),
    ("confidence", True, "expected a number, got true"), ("kind", "bad kind!", "kind"),
    ("kind", "meta.proposal_event", "reserved"), ("content", "  ", "non-empty"),
    ("sources", [999], "does not exist"), ("sources", ["README.md"], "path:line"),
    ("sources", "a.md:1", "list"),
])
def test_write_rules(tmp_path: Path, field: str, value: object, message: str) -> None:
    ls = build(tmp_path)
    args = {"content": "x", "kind": "note", "confidence": 0.5, "sources": [], "scope": "local"}
    args[field] = value
    with pytest.raises(ValidationError, match=message):
        write_context(ls, EMB, parse(WriteRequest, args), actor="tester")
    assert not (tmp_path / "AGENTS.local.db").exists()


def test_bm25_matches_the_formula() -> None:
    docs = ["apple banana apple", "banana cherry", "durian"]
    idx = BM25Index(docs, k1=1.2, b=0.75)
    scores = idx.scores("apple")
    n, df, k1, b = 3, 1, 1.2, 0.75
    avg = (3 + 2 + 1) / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    expected = idf * 2 * (k1 + 1) / (2 + k1 * (1 - b + b * 3 / avg))
    assert scores[0] == pytest.approx(expected, rel=1e-5)
    assert scores[1] == 0 and scores[2] == 0
    assert ANALYZERS[DEFAULT_ANALYZER]("The Cat's hats, and 42!") == ["cat", "hat", "42"]


def test_fusions() -> None:
    pool = Pool(np.asarray([0.9, np.nan, 0.8], np.float32), np.asarray([2.0, 1.0, 4.0], np.float32),
                np.asarray([1, 0, 2]), np.asarray([3, 2, 1]))
    rrf = ReciprocalRankFusion().combine(pool)
    assert rrf[0] == pytest.approx(1 / 61 + 1 / 63)
    assert rrf[1] == pytest.approx(1 / 62)
    w = WeightedFusion(vector_weight=0.5, lexical_weight=0.5).combine(pool)
    assert w[0] == pytest.approx(0.5 * 0.9 + 0.5 * 2.0 / 4.0)
    assert w[1] == pytest.approx(0.5 * 1.0 / 4.0)


def test_weighted_fusion_end_to_end(tmp_path: Path) -> None:
    ls = build(tmp_path)
    res = run_search(ls, SearchRequest(text="alembic migrations", fusion=WeightedFusion()),
                     embedder=EMB)
    assert res.hits[0].chunk.id == 2 and res.hits[0].score <= 1.0


def test_i8_scores_match_f32() -> None:
    rng = np.random.default_rng(3)
    m = rng.standard_normal((500, 64)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = m[17] + 0.05 * rng.standard_normal(64).astype(np.float32)
    from sediment.format import quantize

    mi, scale = quantize(m, 1 / 127)
    f = dot_scores(m, q)
    i = dot_scores(mi, q, scale)
    assert np.max(np.abs(f - i)) < 0.03
    assert top_k(f, 1)[0] == top_k(i, 1)[0] == 17


def test_top_k_ties_and_non_finite() -> None:
    s = np.array([1.0, 3.0, 3.0, -np.inf, 2.0], dtype=np.float32)
    assert top_k(s, 3).tolist() == [1, 2, 4]
    assert top_k(s, 10).tolist() == [1, 2, 4, 0]


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.sampled_from([-np.inf, np.nan, -1.0, 0.0, 0.5, 0.5, 1.0, 2.0])
                       | st.floats(-4, 4, width=32), min_size=1, max_size=400),
       k=st.integers(1, 30), large=st.booleans())
def test_top_k_matches_a_full_sort(values: list[float], k: int, large: bool) -> None:
    """Both ways of finding the k best (a partition, or a threshold from block maxima for
    long arrays) give the stable full sort's answer over the finite scores."""
    s = np.asarray(values, dtype=np.float32)
    finite = np.flatnonzero(np.isfinite(s))
    want = finite[np.lexsort((finite, -s[finite]))][:k]
    saved = vector.SMALL, vector.LARGE, vector.BLOCKS
    vector.SMALL, vector.LARGE, vector.BLOCKS = (0, 1, 128) if large else (0, *saved[1:])
    try:
        assert top_k(s, k).tolist() == want.tolist()
    finally:
        vector.SMALL, vector.LARGE, vector.BLOCKS = saved


def test_search_over_interop_layers_with_a_query_vector() -> None:
    from tests.conftest import shared

    ls = LayerSet.from_directory(shared("interop", "agentsdb-reference"))
    layer = ls.layer(LayerName.USER)
    assert layer is not None
    q = layer.file.vector(0)
    res = search(ls, SearchRequest(text=None, k=3, mode="vector"), q)
    top = res.hits[0]
    assert top.vector_score == pytest.approx(1.0, abs=1e-5)
    assert top.layer is LayerName.USER and top.chunk.id == 1
    assert all(not h.chunk.kind.startswith("meta.") for h in res.hits)


def test_superseded_and_forgotten_chunks_are_left_out(tmp_path: Path) -> None:
    from sediment.store.events import FORGET, SUPERSEDE, event_content

    ls = build(tmp_path)
    before = {cid for _, cid in ask(ls, "deploy database frontend PostgreSQL billing", k=10)}
    assert {1, 2, 4} <= before
    events = [
        NewChunk(SUPERSEDE, event_content(event="supersede", old_id=1, new_id=5), "human",
                 1.0, (1, 5)),
        NewChunk(FORGET, event_content(event="forget", context_id=4, reason="obsolete"),
                 "human", 1.0, (4,)),
    ]
    ls.append(LayerName.DELTA, events, np.zeros((2, 64), np.float32),
              profile=EMB.profile.to_dict())
    after = {cid for _, cid in ask(ls, "deploy database frontend PostgreSQL billing", k=10)}
    assert 1 not in after and 4 not in after and 2 in after
    assert ask(ls, "deploy", k=10, layers=(LayerName.BASE,))[0] == ("base", 1)

"""The context index scores as plain search does, whether built at once or by appends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.context import FileContextStore, NewItem
from sediment.context.index import ItemIndex
from sediment.context.store import StoredItem
from sediment.embed import HashEmbedder
from sediment.format import Chunk
from sediment.search import SearchRequest, search
from sediment.store import LayerName

TEXTS = [f"{who} {verb} the {thing} in iteration {i}."
         for i, (who, verb, thing) in enumerate(
             (w, v, t) for w in ("Ana", "Bo", "Cy") for v in ("fixed", "broke", "tested")
             for t in ("login form", "cache key", "deploy script", "payment webhook"))]
QUERIES = ["who broke the cache", "deploy script", "payment webhook tested by Bo", "iteration 7"]


def _store(tmp_path: Path) -> tuple[FileContextStore, HashEmbedder]:
    emb = HashEmbedder()
    store = FileContextStore(tmp_path / "ctx", profile=emb.profile.to_dict(), dim=384)
    vecs = emb.embed(TEXTS)
    store.append([NewItem("context.output", t, "mcp", v) for t, v in zip(TEXTS, vecs,
                                                                         strict=True)], [])
    return store, emb


def test_the_pool_is_plain_search_s(tmp_path: Path) -> None:
    store, emb = _store(tmp_path)
    index = ItemIndex(384)
    index.sync(store.items())
    allowed = np.ones(len(index), dtype=bool)
    for q in QUERIES:
        qv = emb.embed([q])[0]
        plain = search(store.layers, SearchRequest(text=q, k=10, kinds=("context.output",),
                                                   layers=(LayerName.LOCAL,)), qv,
                       normalised=True)
        got = index.search(q, qv, allowed, 10)
        assert [index.items[p].chunk.id for p in got.pos.tolist()] == [h.id for h in plain.hits]
        # the store is i8: plain search also quantises the query, the index does not
        assert np.allclose(got.fused, [h.score for h in plain.hits], atol=1e-3)


def test_allowed_filters_before_the_pool(tmp_path: Path) -> None:
    store, emb = _store(tmp_path)
    index = ItemIndex(384)
    index.sync(store.items())
    allowed = np.zeros(len(index), dtype=bool)
    allowed[::3] = True
    got = index.search("cache key", emb.embed(["cache key"])[0], allowed, 36)
    assert len(got.pos) == int(allowed.sum()) and allowed[got.pos].all()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=8), min_size=1, max_size=12))
def test_appends_score_as_a_build_at_once(steps: list[int]) -> None:
    emb = HashEmbedder()
    vecs = emb.embed(TEXTS)
    items = [StoredItem(Chunk(id=i + 1, kind="context.output", content=t, author="mcp",
                              confidence=1.0, sources=(), created_at_ms=0), v)
             for i, (t, v) in enumerate(zip(TEXTS, vecs, strict=True))]
    whole = ItemIndex(384)
    whole.sync(items)
    grown = ItemIndex(384)
    n = 0
    for step in steps:
        n = min(len(items), n + step)
        grown.sync(items[:n])
    grown.sync(items)
    allowed = np.ones(len(items), dtype=bool)
    for q in QUERIES:
        qv = emb.embed([q])[0]
        a, b = whole.search(q, qv, allowed, 10), grown.search(q, qv, allowed, 10)
        assert a.pos.tolist() == b.pos.tolist()
        assert np.allclose(a.lexical, b.lexical, atol=1e-4)

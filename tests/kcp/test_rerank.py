"""KCP re-ranking on real layer files, through ``search`` and ``run_search``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sediment.kcp import UNIT_KIND, KcpIndex, KcpReranker, load_order, trigger_hits
from sediment.ops import run_search
from sediment.search import Hit, SearchRequest, search
from sediment.store import LayerName, LayerSet, NewChunk
from sediment.store.events import FORGET, event_content
from tests.kcp.project import EMB, build


def units(ls: LayerSet, hits: list[Hit]) -> list[str]:
    index = KcpIndex.from_layerset(ls)
    return [",".join(u.id for u in index.units_of(h.chunk.id)) or h.chunk.content[:12]
            for h in hits]


def lexical(ls: LayerSet, text: str, *rerankers: KcpReranker) -> list[Hit]:
    return search(ls, SearchRequest(text=text, k=10, mode="lexical",
                                    rerankers=rerankers)).hits


def test_trigger_matching_is_case_insensitive_on_whole_words() -> None:
    assert trigger_hits("How do I get a Bearer Token?", ["bearer-token", "oauth2"]) == [
        "bearer-token"]
    assert trigger_hits("tokenization", ["token"]) == []
    assert trigger_hits("next release train date", ["Release Train"]) == ["Release Train"]


def test_superseded_units_rank_below_their_successor(tmp_path: Path) -> None:
    ls, _ = build(tmp_path)
    query = "deploy to production"
    plain = units(ls, lexical(ls, query))
    assert plain.index("deploy-v2") < plain.index("deploy-v3")  # v2 says "deploy" more
    hits = lexical(ls, query, KcpReranker(KcpIndex.from_layerset(ls), query))
    ranked = units(ls, hits)
    assert ranked.index("deploy-v3") < ranked.index("deploy-v2")
    v2 = hits[ranked.index("deploy-v2")]
    v3 = hits[ranked.index("deploy-v3")]
    assert v2.boosts["kcp.superseded"] < 0 and v2.score < v3.score
    assert "kcp.superseded" in v2.explanation()["boosts"]


def test_a_superseded_unit_alone_is_still_demoted(tmp_path: Path) -> None:
    ls, _ = build(tmp_path)
    query = "how were releases shipped in version 2"
    index = KcpIndex.from_layerset(ls)
    hits = search(ls, SearchRequest(text=query, k=10, mode="lexical",
                                    kinds=("kcp.intent",))).hits
    before = {h.chunk.id: h.score for h in hits}
    reranked = KcpReranker(index, query)(
        [h for h in hits if index.units_of(h.chunk.id)[0].id != "deploy-v3"])
    v2 = next(h for h in reranked if index.units_of(h.chunk.id)[0].id == "deploy-v2")
    assert v2.score == before[v2.chunk.id] * 0.5


def test_a_trigger_match_ranks_the_unit_up(tmp_path: Path) -> None:
    ls, _ = build(tmp_path)
    query = "bearer token for the api"
    plain = units(ls, lexical(ls, query))
    assert plain[0].startswith("# Tokens")  # the page that is not a unit wins on words
    hits = lexical(ls, query, KcpReranker(KcpIndex.from_layerset(ls), query))
    assert units(ls, hits)[0] == "auth"
    assert hits[0].boosts["kcp.trigger"] > 0


def test_hybrid_run_search_with_the_reranker(tmp_path: Path) -> None:
    ls, _ = build(tmp_path)
    query = "what is the rollout process for production"
    request = SearchRequest(text=query, k=5,
                            rerankers=(KcpReranker(KcpIndex.from_layerset(ls), query),))
    result = run_search(ls, request, embedder=EMB)
    assert units(ls, result.hits)[0] == "deploy-v3"
    assert result.hits[0].boosts["kcp.trigger"] > 0
    assert [u.id for u in load_order(result.hits[:1], KcpIndex.from_layerset(ls))] == [
        "overview", "cluster", "deploy-v3"]


def test_the_intent_is_searchable_on_its_own(tmp_path: Path) -> None:
    ls, _ = build(tmp_path)
    hits = lexical(ls, "organised")
    assert hits and hits[0].chunk.kind == "kcp.intent"
    assert units(ls, hits[:1]) == ["overview"]


def test_unit_events_in_a_higher_layer_win_and_forgotten_ones_vanish(tmp_path: Path) -> None:
    ls, _ = build(tmp_path)
    index = KcpIndex.from_layerset(ls)
    old = index.units[("knowledge.yaml", "auth")]
    data = {"event": "kcp_unit", "manifest": "knowledge.yaml", "project": "Acme Platform",
            "unit": "auth", "path": "docs/auth.md", "intent": old.intent, "scope": "module",
            "audience": ["developer"], "triggers": ["sso"], "validated": None,
            "supersedes": [], "depends_on": [], "kind": "knowledge", "deprecated": False,
            "intent_chunk": old.intent_chunk}
    zero = np.zeros((1, EMB.profile.dim), dtype=np.float32)
    [new_id] = ls.append(LayerName.LOCAL, [NewChunk(UNIT_KIND, json.dumps(data), "mcp", 1.0,
                                                    old.chunk_ids)], zero,
                         profile=EMB.profile.to_dict())
    assert KcpIndex.from_layerset(ls).units[old.key].triggers == ("sso",)
    ls.append(LayerName.LOCAL, [NewChunk(FORGET, event_content(
        event="forget", context_id=new_id, reason="test"), "mcp", 1.0, (new_id,))], zero,
        profile=EMB.profile.to_dict())
    assert KcpIndex.from_layerset(ls).units[old.key].triggers == ("oauth2", "bearer-token")


def test_hits_outside_any_unit_and_empty_lists_pass_through(tmp_path: Path) -> None:
    ls, _ = build(tmp_path)
    reranker = KcpReranker(KcpIndex.from_layerset(ls), "anything")
    assert reranker([]) == []
    hits = lexical(ls, "rotate monthly")
    assert [h.score for h in reranker(list(hits))] == [h.score for h in hits]

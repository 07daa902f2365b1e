"""Rerankers are chosen by the caller: the engine and the ops search rank a request alike."""

from __future__ import annotations

from pathlib import Path

from sediment.ops import run_search
from sediment.ops.query import run_query, search_response
from sediment.ops.requests import SearchOptions, SearchParams, parse
from sediment.ops.rerank import STANDARD, kcp_triggers, with_rerankers
from sediment.ops.service import ContextService
from sediment.search import Hit, Reranker, SearchRequest, search
from sediment.store import LayerSet
from tests.conftest import Runner
from tests.kcp.project import EMB, build
from tests.mcp.conftest import make_store

QUERY = "bearer token for the api"


def ranking(hits: list[Hit]) -> list[tuple[int, float]]:
    return [(h.chunk.id, round(h.score, 6)) for h in hits]


def test_run_search_adds_no_reranker_of_its_own(tmp_path: Path) -> None:
    ls, _ = build(tmp_path)
    request = SearchRequest(text=QUERY, k=10)
    vec = EMB.embed([QUERY])[0]
    engine = search(ls, request, vec, normalised=True).hits
    ops = run_search(ls, request, embedder=EMB).hits
    assert ranking(ops) == ranking(engine)
    assert not any(h.boosts for h in ops)


def test_the_standard_pipeline_is_kcp_and_only_when_manifests_exist(tmp_path: Path) -> None:
    ls, _ = build(tmp_path)
    request = SearchRequest(text=QUERY, k=10)
    assert kcp_triggers(ls, request) is not None
    assert kcp_triggers(ls, SearchRequest(k=10, mode="vector")) is None
    no_manifests = LayerSet.from_directory(make_store(tmp_path / "plain"))
    assert with_rerankers(no_manifests, request, STANDARD) is request
    chosen = with_rerankers(ls, request, STANDARD)
    assert len(chosen.rerankers) == 1 and not request.rerankers
    plain = run_query(ls, parse(SearchParams, {"query": QUERY}), embedder=EMB, rerankers=())
    kcp = run_query(ls, parse(SearchParams, {"query": QUERY}), embedder=EMB,
                    rerankers=STANDARD)
    assert ranking(plain.hits) == ranking(run_search(ls, request, embedder=EMB).hits)
    assert ranking(kcp.hits) == ranking(run_search(ls, chosen, embedder=EMB).hits)
    assert kcp.hits[0].boosts["kcp.trigger"] > 0 and not plain.hits[0].boosts


def test_a_service_adds_its_own_reranker(tmp_path: Path) -> None:
    """What the memory and context services do: compose STANDARD with their own."""
    ls, _ = build(tmp_path)
    seen: list[int] = []

    def last_first(layerset: LayerSet, request: SearchRequest) -> Reranker:
        def rerank(hits: list[Hit]) -> list[Hit]:
            seen.append(len(hits))
            return hits[::-1]
        return rerank

    service = ContextService(ls, EMB, rerankers=(*STANDARD, last_first))
    out = service.search(parse(SearchParams, {"query": QUERY, "k": 3}), None)
    standard = ContextService(ls, EMB).search(parse(SearchParams, {"query": QUERY, "k": 3}), None)
    assert seen and out["results"] != standard["results"]


def test_cli_and_mcp_rank_and_shape_alike(tmp_path: Path, sediment: Runner) -> None:
    """`sediment search --json` and agents_search: same hits, same keys, KCP applied."""
    ls, _ = build(tmp_path)
    store = tmp_path / "store"
    dim = {"SEDIMENT_EMBED_DIM": str(EMB.profile.dim)}
    r = sediment("search", QUERY, "--dir", str(store), "--embedder", "hash", "-k", "5",
                 "--json", env=dim)
    assert r.code == 0, r.err
    cli = r.json()
    service = ContextService(ls, EMB).search(parse(SearchParams, {"query": QUERY, "k": 5}), None)
    assert set(cli) == set(service) == {"query", "layers", "results", "timings_ms"}
    assert [x["id"] for x in cli["results"]] == [x["id"] for x in service["results"]]
    assert cli["results"][0]["id"] == service["results"][0]["id"]
    r = sediment("search", QUERY, "--dir", str(store), "--embedder", "hash", "-k", "5",
                 "--json", "--explain", env=dim)
    top = r.json()["results"][0]["explain"]
    assert top["boosts"]["kcp.trigger"] > 0
    options = parse(SearchOptions, {"query": QUERY, "k": 5, "explain": True})
    shaped = search_response(options, run_query(ls, options, embedder=EMB, rerankers=STANDARD))
    assert set(shaped["results"][0]) == set(r.json()["results"][0])

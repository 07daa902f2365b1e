"""prune_after_iterations, access counts, and relevance deciding what the factors rank."""

from __future__ import annotations

from pathlib import Path

from sediment.context import ContextLoop, ContextSettings
from sediment.context.files import FileContextStore
from sediment.embed import HashEmbedder
from sediment.search import SearchRequest, search
from sediment.store import LayerName
from tests.context.conftest import make_loop


def _iterations(loop: ContextLoop, first: int, last: int) -> None:
    for i in range(first, last + 1):
        loop.store_iteration_result("al", i, f"Worked on step {i}.", True)


def test_items_past_prune_after_iterations_are_forgotten_unless_helpful(
        tmp_path: Path) -> None:
    s = ContextSettings(active_iterations=2, summarize_after_iterations=4,
                        archive_after_iterations=6, prune_after_iterations=10)
    loop = make_loop(tmp_path, s)
    old = loop.store_context("al", "The old cache key format uses colons.", "output")["id"]
    kept = loop.store_context("al", "The CI runner needs docker login first.", "output")["id"]
    skill = loop.store_context("al", "Run the linter before committing.", "skill")["id"]
    loop.mark_useful("al", kept, True)
    _iterations(loop, 1, 11)  # the items of iteration 0 are 11 old, the first result 10
    out = loop.summarize_old_context("al", older_than_iterations=4)
    assert [d["id"] for d in out["pruned"]] == [old]
    assert "older than 10 iterations" in out["pruned"][0]["reason"]
    history = loop.get_relevant_context("al", "cache key format", min_score=0.0,
                                        include_archived=True, max_items=50)
    ids = {d["id"] for d in history["items"]}
    assert old not in ids and kept in ids and skill in ids
    # compacted, not only hidden: no layer file holds the forgotten text any more
    store = loop.store
    assert isinstance(store, FileContextStore)
    texts = [i.chunk.content for i in store.items(archived=True)]
    assert "The old cache key format uses colons." not in texts
    assert loop.stats("al")["hidden"]["forgotten"] == 1


def test_prune_low_value_context_applies_prune_after_iterations(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, ContextSettings(prune_after_iterations=6))
    old = loop.store_context("al", "An early note.", "output")["id"]
    _iterations(loop, 1, 5)
    assert loop.prune("al", 0.3)["count"] == 0  # 5 iterations old: not yet
    _iterations(loop, 6, 7)
    out = loop.prune("al", 0.3)
    assert [d["id"] for d in out["removed"]] == [old]


def test_the_task_of_a_run_never_ages_out(tmp_path: Path) -> None:
    """Issue 27: in a 60-iteration loop that summarised every 10 iterations the task item
    was archived after 50 iterations (and expired by prune_after_iterations later)."""
    loop = make_loop(tmp_path, ContextSettings(prune_after_iterations=55))
    task = loop.store_context("al", "Make the integration tests pass.", "task",
                              run_id="r1")["id"]
    note = loop.store_context("al", "The integration tests need postgres.", "output",
                              run_id="r1")["id"]
    for i in range(1, 61):
        loop.store_iteration_result("al", i, f"Worked on step {i}.", True, run_id="r1")
        if i % 10 == 0:
            out = loop.summarize_old_context("al", 20, run_id="r1")
            assert task not in {s for d in out["summaries"] for s in d["sources"]}
    assert loop.prune("al", 0.3)["count"] == 0
    got = loop.get_relevant_context("al", "Make the integration tests pass", min_score=0.0,
                                    run_id="r1", max_items=50)["items"]
    mine = next(d for d in got if d["id"] == task)
    assert mine["state"] == "active" and mine["age"] == 60
    assert note not in {d["id"] for d in got}  # other items of iteration 0 did age out
    assert loop.stats("al")["by_state"].get("archived", 0) >= 1


def test_access_counts_are_recorded_without_writing_on_read(tmp_path: Path) -> None:
    loop = make_loop(tmp_path)
    a = loop.store_context("al", "The staging database listens on port 5433.", "task")["id"]
    store = loop.store
    before = store.version()
    for _ in range(3):
        got = loop.get_relevant_context("al", "staging database port", min_score=0.0)
        assert got["items"][0]["id"] == a
    assert store.version() == before  # reads wrote nothing
    assert got["items"][0]["access_count"] == 3  # this retrieval included
    assert loop.stats("al")["accesses"] == 3
    loop.store_context("al", "Another note.", "task")  # the next write carries the counts
    fresh = make_loop(tmp_path)  # a new process: only what the layer file holds
    assert fresh.stats("al")["accesses"] == 3
    item = fresh.get_relevant_context("al", "staging database port", min_score=0.0)["items"][0]
    assert item["id"] == a and item["access_count"] == 4 and item["last_accessed"]


def test_flush_writes_pending_counts(tmp_path: Path) -> None:
    loop = make_loop(tmp_path)
    loop.store_context("al", "Deploys go through tools/deploy.sh.", "task")
    loop.get_relevant_context("al", "deploy", min_score=0.0)
    assert loop.flush() == 1 and loop.flush() == 0
    assert make_loop(tmp_path).stats("al")["accesses"] == 1


def test_without_feedback_the_items_are_plain_search_s(tmp_path: Path) -> None:
    """Recency reorders the relevant items but cannot trade them for recent ones: with no
    feedback the set returned is plain hybrid search's top max_items (the old additive
    ranking returned mostly the latest iterations here)."""
    loop = make_loop(tmp_path)
    topics = ["payment webhook", "login form", "cache key", "deploy script", "search page"]
    for i in range(40):
        loop.store_iteration_result("al", i, f"Changed the {topics[i % 5]} in step {i}.",
                                    True)
    store = loop.store
    assert isinstance(store, FileContextStore)
    emb = HashEmbedder()
    for q in ("payment webhook retries", "the login form step 3", "cache key change"):
        got = loop.get_relevant_context("al", q, max_items=5, min_score=0.0)["items"]
        plain = search(store.layers, SearchRequest(
            text=q, k=5, kinds=("context.iteration",), layers=(LayerName.LOCAL,)),
            emb.embed([q])[0], normalised=True)
        assert {d["id"] for d in got} == {f"c{h.id}" for h in plain.hits}
        assert [d["score"] for d in got] == sorted((d["score"] for d in got), reverse=True)


def test_feedback_reach_lets_a_helpful_item_in_from_further_down(tmp_path: Path) -> None:
    texts = [f"The cache {w} was changed." for w in ("key", "size", "policy", "warmup",
                                                      "eviction", "layout")]
    for reach, expect_in in ((1, False), (3, True)):
        loop = make_loop(tmp_path / str(reach), ContextSettings(feedback_reach=reach))
        ids = [loop.store_context("al", t, "output")["id"] for t in texts]
        ranked = [d["id"] for d in loop.get_relevant_context(
            "al", "cache key", max_items=6, min_score=0.0)["items"]]
        low = ranked[4]  # fifth by relevance: outside a max_items of 2
        assert low in ids
        # another process: it did not return the item, so the votes name no query
        other = make_loop(tmp_path / str(reach), ContextSettings(feedback_reach=reach))
        for _ in range(5):
            assert other.mark_useful("al", low, True)["query"] is None
        got = [d["id"] for d in other.get_relevant_context("al", "cache key", max_items=2,
                                                           min_score=0.0)["items"]]
        assert (low in got) is expect_in


def test_skills_across_runs_follows_the_setting_and_the_argument(tmp_path: Path) -> None:
    other = make_loop(tmp_path).store_context("al", "Lint before committing.", "skill",
                                              run_id="old")["id"]
    for across, arg, expected in ((True, None, {other}), (False, None, set()),
                                  (False, True, {other}), (True, False, set())):
        loop = make_loop(tmp_path, ContextSettings(skills_across_runs=across))
        got = loop.get_relevant_context("al", "lint before committing", min_score=0.0,
                                        run_id="new", skills_across_runs=arg)
        assert {d["id"] for d in got["items"]} == expected, (across, arg)

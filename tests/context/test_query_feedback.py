"""Feedback conditioned on the query it was given for (issue 17: feedback must lift the
evidence of similar questions without crowding out unrelated ones)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment.context import ContextLoop, ContextSettings, ranking
from tests.context.conftest import make_loop

SETTINGS = ContextSettings(feedback_similarity=0.8, feedback_gain=0.6)
DISTRACTORS = ["The staging servers restart at noon.",
               "Bucket policies are reviewed every month.",
               "A deploy takes ten minutes on a good day.",
               "Which file to edit is written in the README."]
TARGET = "Look in infra/vars.yml: the storage name is sediment-stg."
OTHERS = ["The cache tests time out on CI when redis is slow.",
          "Cache keys are built from the user id and the tenant."]
MARKED = "which file names the staging deploy bucket"
SIMILAR = "which file names the staging deploy bucket now"
UNRELATED = "why do the cache tests time out"


def _ids(loop: ContextLoop, query: str, k: int) -> list[str]:
    return [d["id"] for d in loop.get_relevant_context("al", query, max_items=k,
                                                       min_score=0.0)["items"]]


def _usefulness(loop: ContextLoop, query: str, item: str) -> float:
    got = loop.get_relevant_context("al", query, max_items=50, min_score=0.0)["items"]
    value: float = next(d for d in got if d["id"] == item)["factors"]["usefulness"]["value"]
    return value


def _seed(loop: ContextLoop) -> str:
    for t in DISTRACTORS:
        loop.store_context("al", t, "output")
    target: str = loop.store_context("al", TARGET, "output")["id"]
    for t in OTHERS:
        loop.store_context("al", t, "output")
    return target


def test_query_weight() -> None:
    assert ranking.query_weight(0.79, 0.8) == 0.0
    assert ranking.query_weight(0.8, 0.8) == 0.0
    assert ranking.query_weight(0.9, 0.8) == pytest.approx(0.5)
    assert ranking.query_weight(1.0, 0.8) == 1.0
    assert ranking.query_weight(float("nan"), 0.8) == 0.0
    assert ranking.query_weight(1.0, 1.0) == 1.0


def test_feedback_for_a_similar_query_lifts_the_item_and_for_an_unrelated_one_does_not(
        tmp_path: Path, context_backend: str) -> None:
    loop = make_loop(tmp_path, SETTINGS)
    target = _seed(loop)
    assert target not in _ids(loop, SIMILAR, 2)
    unrelated = loop.get_relevant_context("al", UNRELATED, max_items=4, min_score=0.0)
    out = loop.mark_useful("al", target, True, query=MARKED)
    assert out["query"] == MARKED
    got = loop.get_relevant_context("al", SIMILAR, max_items=2, min_score=0.0)["items"]
    assert target in [d["id"] for d in got]
    lifted = next(d for d in got if d["id"] == target)
    assert lifted["factors"]["usefulness"]["value"] > 0.5
    after = loop.get_relevant_context("al", UNRELATED, max_items=4, min_score=0.0)
    assert ([(d["id"], d["score"]) for d in after["items"]]
            == [(d["id"], d["score"]) for d in unrelated["items"]])
    # the vote is in the store, not in this process: a new service over it agrees, also
    # after a compaction (a prune rewrites the store)
    loop.mark_useful("al", _ids(loop, UNRELATED, 1)[0], False, query=UNRELATED)
    loop.mark_useful("al", _ids(loop, UNRELATED, 1)[0], False, query=UNRELATED)
    assert loop.prune("al", 0.3)["count"] == 1
    again = make_loop(tmp_path, SETTINGS)
    assert target in _ids(again, SIMILAR, 2)
    assert _usefulness(again, UNRELATED, target) == 0.5
    assert _usefulness(again, SIMILAR, target) > 0.5


def test_a_vote_without_a_query_names_the_last_query_that_returned_the_item(
        tmp_path: Path, context_backend: str) -> None:
    loop = make_loop(tmp_path, SETTINGS)
    target = _seed(loop)
    assert target in _ids(loop, MARKED, 10)
    assert loop.mark_useful("al", target, True)["query"] == MARKED
    assert target in _ids(loop, SIMILAR, 2)
    # a service that never returned it records a vote for every query, as before
    other = make_loop(tmp_path, SETTINGS)
    assert other.mark_useful("al", target, True, reason="from a log")["query"] is None
    assert other.stats("al")["feedback"]["helpful"] == 2


def test_feedback_degrades_to_the_same_query_text_without_an_embedder(
        tmp_path: Path, context_backend: str) -> None:
    loop = make_loop(tmp_path, SETTINGS)
    target = _seed(loop)
    loop.mark_useful("al", target, True, query=MARKED)
    lexical = ContextLoop(loop.store, None, SETTINGS, project="demo")
    assert target in _ids(lexical, MARKED, 2)
    assert target not in _ids(lexical, SIMILAR, 2)


def test_a_vote_moves_with_its_item_into_the_archive(tmp_path: Path,
                                                     context_backend: str) -> None:
    loop = make_loop(tmp_path, SETTINGS)
    target = _seed(loop)
    loop.mark_useful("al", target, True, query=MARKED)
    assert loop.store.archive([int(target[1:])], "2026-01-02") == 1
    again = make_loop(tmp_path, SETTINGS)
    got = again.get_relevant_context("al", SIMILAR, max_items=2, min_score=0.0,
                                     include_archived=True)["items"]
    assert target in [d["id"] for d in got]
    assert next(d for d in got if d["id"] == target)["state"] == "archived"
    assert target not in _ids(again, SIMILAR, 2)

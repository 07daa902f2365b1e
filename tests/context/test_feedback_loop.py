"""Usefulness feedback in a loop that asks with one constant query (its task) must not
crowd relevance out (issue 27: at iteration 46 the psycopg2 fix the agent needed was
missing from the block while fixes marked helpful at every earlier iteration filled it)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sediment.context import ContextLoop, ranking
from tests.context.conftest import make_loop
from tests.context.test_query_feedback import MARKED, SETTINGS, SIMILAR, _ids, _seed

TASK = "Make the integration tests pass"
NEEDED = ("Fixed the integration tests: installed psycopg2-binary, the integration tests "
          "import psycopg2 for their database fixtures.")
OFTEN_MARKED = ["Fixed redis: started it with docker compose up -d redis for the tests.",
          "Fixed the port: removed the stray container holding port 5432 for the tests.",
          "Fixed a fixture: moved api_client to tests/conftest.py for the tests."]
BUDGET = 120


def _loop_to_46(loop: ContextLoop, vote: bool) -> tuple[str, list[str], dict[str, object]]:
    """Iterations 1-45: the psycopg2 fix at 13, three other fixes at 20, 25 and 30 that
    the agent marks helpful at every iteration after (the same items every time); then
    the block of iteration 46, asked with the task."""
    loop.store_context("al", TASK + ".", "task")
    needed = ""
    marked: list[str] = []
    for i in range(1, 46):
        if vote:
            for item in marked:
                loop.mark_useful("al", item, True, query=TASK)
        if i == 13:
            needed = loop.store_iteration_result("al", i, NEEDED, True)["id"]
        elif i in (20, 25, 30):
            text = OFTEN_MARKED[len(marked)]
            marked.append(loop.store_iteration_result("al", i, text, True)["id"])
        else:
            loop.store_iteration_result("al", i, f"Worked on endpoint {i}.", True)
    return needed, marked, loop.get_relevant_context("al", TASK, max_tokens=BUDGET)


def test_repeated_votes_for_the_task_do_not_push_the_needed_fix_out(tmp_path: Path) -> None:
    needed, _, plain = _loop_to_46(make_loop(tmp_path / "plain"), vote=False)
    assert needed in plain["included"]  # without feedback the fix is in the block
    needed, marked, voted = _loop_to_46(make_loop(tmp_path / "voted"), vote=True)
    assert needed in voted["included"]
    # the votes still count, bounded: each marked item's usefulness factor is one vote's
    lifted = {d["id"]: d["factors"]["usefulness"]["value"] for d in voted["items"]}
    assert all(0.5 < lifted[m] <= 0.6 for m in marked if m in lifted)


def test_a_vote_fades_with_the_iterations_of_its_run(tmp_path: Path) -> None:
    loop = make_loop(tmp_path)
    item = loop.store_iteration_result("al", 1, "Fixed the flaky login test.", True)["id"]
    loop.mark_useful("al", item, True, query="why is the login test flaky")

    def usefulness() -> float:
        got = loop.get_relevant_context("al", "why is the login test flaky", min_score=0.0)
        value: float = next(d for d in got["items"] if d["id"] == item)["factors"][
            "usefulness"]["value"]
        return value
    assert usefulness() == pytest.approx(0.6)
    for i in range(2, 5):  # feedback_half_life (3) iterations later: half a vote
        loop.store_iteration_result("al", i, f"Worked on endpoint {i}.", True)
    assert usefulness() == pytest.approx(0.55)


def test_vote_decay_and_bound() -> None:
    assert ranking.vote_decay(0, 10) == 1.0
    assert ranking.vote_decay(10, 10) == pytest.approx(0.5)
    assert ranking.vote_decay(20, 10) == pytest.approx(0.25)
    assert ranking.vote_decay(50, 0) == 1.0
    assert ranking.bounded(7.0) == ranking.VOTE_CAP == 1.0
    assert ranking.bounded(0.4) == 0.4


def test_a_vote_lifts_its_item_into_the_set_only_in_its_own_iteration(
        tmp_path: Path) -> None:
    """Later, the same query's set is plain search's again and the vote only orders it."""
    loop = make_loop(tmp_path, SETTINGS)
    target = _seed(loop)
    assert target not in _ids(loop, SIMILAR, 2)
    loop.mark_useful("al", target, True, query=MARKED)
    assert target in _ids(loop, SIMILAR, 2)
    loop.store_iteration_result("al", 1, "Worked on the login form.", True)
    assert target not in _ids(loop, SIMILAR, 2)
    again = make_loop(tmp_path, replace(SETTINGS, feedback_lift_iterations=1))
    assert target in _ids(again, SIMILAR, 2)

"""The ranking factors' formulas and the injection block's budget."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.context import ContextLoop, ContextSettings, count_tokens, inject, ranking


def test_factor_formulas() -> None:
    s = ContextSettings()
    assert ranking.recency(10, False, s) == math.exp(-1.0)
    assert ranking.recency(10, True, s) == math.exp(-0.5)
    assert ranking.usefulness(0, 0) == 0.5
    assert ranking.usefulness(2, 0) == 0.7
    assert ranking.usefulness(0, 4) == 0.0
    assert ranking.usefulness(9, 0) == 1.0
    assert ranking.type_match("skill", ["skill"]) == 1.0
    assert ranking.type_match("error", ["skill"]) == 0.5
    assert ranking.semantic(-0.3, 0.0) == 0.0  # clipped, not min-max normalised
    assert ranking.semantic(0.7, None) == 0.5  # a paraphrase-level cosine, no term matched
    assert ranking.semantic(0.4, 5.0) == 0.5  # half of each side
    assert ranking.semantic(None, 5.0) == 0.5  # lexical only: that part alone
    assert ranking.semantic(1.0, 1e9) > 0.99


def test_min_score_is_absolute(loop: ContextLoop) -> None:
    loop.store_context("al", "The deploy script lives in tools/deploy.sh.", "task")
    loop.store_context("al", "Bananas are yellow.", "task")
    out = loop.get_relevant_context("al", "where is the deploy script", min_score=0.0)
    assert len(out["items"]) == 2
    top = out["items"][0]["score"]
    high = loop.get_relevant_context("al", "where is the deploy script", min_score=top)
    assert [d["id"] for d in high["items"]] == [out["items"][0]["id"]]


def _item(i: int, text: str, kind: str = "iteration") -> dict[str, object]:
    return {"id": f"c{i}", "type": kind, "content": text}


def test_an_item_that_does_not_fit_is_shortened_at_a_sentence() -> None:
    long = " ".join(f"Sentence number {i} says something about the build." for i in range(40))
    out = inject([_item(1, "Short first item."), _item(2, long)], 120)
    assert out["included"] == ["c1"] and out["shortened"] == ["c2"]
    assert out["tokens"] <= 120 and count_tokens(out["block"]) <= 120
    assert out["block"].rstrip().endswith("about the build.")
    assert "### [ITERATION]" in out["block"]


def test_a_budget_below_the_header_gives_no_block() -> None:
    out = inject([_item(1, "Anything.")], 5)
    assert out["block"] == "" and out["left_out"] == ["c1"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=8),
       st.integers(min_value=16, max_value=400))
def test_the_block_never_exceeds_the_budget(texts: list[str], budget: int) -> None:
    out = inject([_item(i, t, "error") for i, t in enumerate(texts)], budget)
    assert count_tokens(out["block"]) <= budget

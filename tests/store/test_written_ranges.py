"""The written ranges (``store/ids.py``): one per kind of store, disjoint, inside the u32 ids
the RFC allows, each allocated above its own high water only."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from sediment.errors import ValidationError
from sediment.store import LayerName, LayerSet
from sediment.store.ids import (
    ACTOR_IDS,
    COMPILED_MAX,
    CONTEXT_IDS,
    PROJECT_IDS,
    U32_MAX,
    WRITTEN_START,
)
from tests.store.test_layerset import PROFILE, note, vec

RANGES = (PROJECT_IDS, CONTEXT_IDS, ACTOR_IDS)


def test_ranges_split_the_written_half_without_gap_or_overlap() -> None:
    assert PROJECT_IDS.first == WRITTEN_START == COMPILED_MAX + 1
    for lower, upper in pairwise(RANGES):
        assert lower.first <= lower.last < upper.first == lower.last + 1
    assert ACTOR_IDS.last == U32_MAX == 2**32 - 1  # RFC: a chunk id is a u32


def test_high_water_counts_only_its_own_range() -> None:
    legacy = [WRITTEN_START + 5, 7]  # what older versions wrote into an actor's file
    assert ACTOR_IDS.high_water(legacy) == ACTOR_IDS.first - 1
    assert list(ACTOR_IDS.next_ids(ACTOR_IDS.high_water(legacy), 2)) == [
        ACTOR_IDS.first, ACTOR_IDS.first + 1]
    assert PROJECT_IDS.high_water([*legacy, CONTEXT_IDS.first + 9]) == WRITTEN_START + 5


def test_a_range_refuses_to_run_into_the_next() -> None:
    assert list(PROJECT_IDS.next_ids(PROJECT_IDS.last - 1, 1)) == [PROJECT_IDS.last]
    with pytest.raises(ValidationError, match=r"project range .* no 2 free id"):
        PROJECT_IDS.next_ids(PROJECT_IDS.last - 1, 2)
    assert list(ACTOR_IDS.next_ids(U32_MAX, 0)) == []


def test_each_kind_of_set_numbers_from_its_own_range(tmp_path: Path) -> None:
    sets = {r.name: LayerSet({LayerName.LOCAL: tmp_path / r.name / "AGENTS.local.db"}, ids=r)
            for r in RANGES}
    got = {name: ls.append(LayerName.LOCAL, [note("a"), note("b")], vec(2), profile=PROFILE,
                           allowed=(LayerName.LOCAL,))
           for name, ls in sets.items()}
    assert got == {r.name: [r.first, r.first + 1] for r in RANGES}


def test_a_legacy_id_of_another_range_is_kept_and_never_moves_the_allocator(
        tmp_path: Path) -> None:
    """An actor's file from before the ranges holds ids from 2^31: they stay, and new ids
    come from the actor range (an id the project range has is never given to a memory)."""
    path = tmp_path / "AGENTS.user.db"
    old = LayerSet({LayerName.USER: path})  # the project range, as every writer used
    legacy = old.append(LayerName.USER, [note("old")], vec(1), profile=PROFILE,
                        allowed=(LayerName.USER,))
    assert legacy == [WRITTEN_START]
    actor = LayerSet({LayerName.USER: path}, ids=ACTOR_IDS)
    new = actor.append(LayerName.USER, [note("new")], vec(1, seed=1), profile=PROFILE,
                       allowed=(LayerName.USER,))
    assert new == [ACTOR_IDS.first]
    assert actor.append(LayerName.USER, [note("newer")], vec(1, seed=2), profile=PROFILE,
                        allowed=(LayerName.USER,)) == [ACTOR_IDS.first + 1]
    assert [c.content for c in (actor.get(WRITTEN_START)[1],  # type: ignore[index]
                                actor.get(ACTOR_IDS.first)[1])] == ["old", "new"]  # type: ignore[index]
    project = LayerSet({LayerName.USER: path})  # ids of a later range in its file
    assert project.append(LayerName.USER, [note("next")], vec(1, seed=3), profile=PROFILE,
                          allowed=(LayerName.USER,)) == [WRITTEN_START + 1]


def test_a_project_set_at_the_end_of_its_range_says_so(tmp_path: Path) -> None:
    ls = LayerSet({LayerName.LOCAL: tmp_path / "AGENTS.local.db"})
    ls.append(LayerName.LOCAL, [note("last", id=PROJECT_IDS.last)], vec(1), profile=PROFILE,
              allowed=(LayerName.LOCAL,))
    with pytest.raises(ValidationError, match="chunk ids are exhausted: the project range"):
        ls.append(LayerName.LOCAL, [note("one more")], vec(1, seed=1), profile=PROFILE,
                  allowed=(LayerName.LOCAL,))

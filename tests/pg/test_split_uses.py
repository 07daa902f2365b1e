"""A use event's counts split into the actor's own part and the shared (global) part: the one
function saving and pushing both use."""

from __future__ import annotations

from sediment.pg.memory import split_uses


def test_own_part_first_then_the_shared_part() -> None:
    data = {"event": "use", "actor": "alice", "uses": {"5": [1, 10], "7": [2, 20]}}
    assert split_uses(data, {"7"}) == [
        ({"event": "use", "actor": "alice", "uses": {"5": [1, 10]}}, False),
        ({"event": "use", "actor": "alice", "uses": {"7": [2, 20]}}, True)]


def test_one_part_when_all_counts_are_of_one_kind() -> None:
    data = {"event": "use", "uses": {"7": [2, 20]}}
    assert split_uses(data, {"7"}) == [(data, True)]
    assert split_uses(data, set()) == [(data, False)]
    assert split_uses({"event": "use", "uses": "junk"}, {"7"}) == \
        [({"event": "use", "uses": "junk"}, False)]

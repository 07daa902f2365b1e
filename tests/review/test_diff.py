"""Diffing a delta against base and user: additions, overrides, conflicts, duplicates."""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment.errors import NotFoundError, SchemaMismatchError, ValidationError
from sediment.review import accept, diff_layers
from sediment.store import HUMAN_WRITABLE, LayerName, LayerSet, NewChunk
from tests.review.helpers import EMB, agent_propose, agent_write, make_base


def _ls(tmp_path: Path, etype: str = "f32") -> LayerSet:
    make_base(tmp_path, etype=etype)
    return LayerSet.from_directory(tmp_path)


def _override(ls: LayerSet, cid: int, text: str, scope: LayerName = LayerName.DELTA) -> None:
    ls.append(scope, [NewChunk("note", text, "human", 1.0, id=cid)], EMB.embed([text]),
              profile=EMB.profile.to_dict(), allowed=HUMAN_WRITABLE)


@pytest.mark.parametrize("etype", ["f32", "i8"])
def test_added_overrides_conflicts_and_pending(tmp_path: Path, etype: str) -> None:
    ls = _ls(tmp_path, etype)
    new, pid = agent_propose(ls, "Feature flags live in LaunchDarkly.")
    _override(ls, 3, "Database migrations run with flyway before the web server starts.")
    _override(ls, 2, "The deploy job pushes containers to the staging cluster every night.")
    report = diff_layers(ls)
    d = report.to_dict()
    assert [c["id"] for c in d["added"]] == [new]
    assert d["added"][0]["proposal"] == "pending"
    assert {c["id"]: c["status"] for c in d["overrides"]} == {3: "overrides-base",
                                                              2: "same-as-base"}
    same_id = [m for m in report.conflicts if m.type == "same-id"]
    assert [(m.delta.id, m.layer, m.other.id) for m in same_id] == [(3, LayerName.BASE, 3)]
    assert [p.proposal_id for p in report.pending] == [pid]
    # the proposal and the event recording who wrote the proposed chunk
    assert d["summary"]["events"] == 2 and d["summary"]["delta_chunks"] == 3
    assert d["added"][0]["actor"] == "tester" and d["pending_proposals"][0]["actor"] == "tester"


def test_near_duplicates_with_other_content_are_conflicts(tmp_path: Path) -> None:
    ls = _ls(tmp_path)
    near = agent_write(ls, "Requests to /billing MUST include the X-Account header always.")
    dup = agent_write(ls, "Requests to /billing MUST include the X-Account header.")
    far = agent_write(ls, "Completely unrelated: the office plants need water.")
    report = diff_layers(ls, threshold=0.8)
    conflicts = [(m.type, m.delta.id, m.other.id) for m in report.conflicts]
    assert ("near-duplicate", near, 1) in conflicts
    assert all(d != far for _, d, _ in conflicts)
    assert [(m.type, m.delta.id, m.other.id) for m in report.duplicates] == [("duplicate", dup, 1)]
    sim = next(m.similarity for m in report.conflicts if m.delta.id == near)
    assert sim is not None and 0.8 <= sim < 1.0
    strict = diff_layers(ls, threshold=0.999)
    assert not [m for m in strict.conflicts if m.type == "near-duplicate"]


def test_user_versions_are_accepted_or_conflicting(tmp_path: Path) -> None:
    ls = _ls(tmp_path)
    a, pid = agent_propose(ls, "An accepted fact.")
    accept(ls, [pid])
    b = agent_write(ls, "The agent's wording.")
    _override(ls, b, "The human's different wording.", LayerName.USER)
    report = diff_layers(ls)
    assert report.to_dict()["accepted"] == [a]
    assert {c.chunk.id: c.status for c in report.chunks}[b] == "conflicts-user"
    assert [(m.type, m.layer) for m in report.conflicts if m.delta.id == b] == \
        [("same-id", LayerName.USER)]
    assert report.pending == ()


def test_errors(tmp_path: Path) -> None:
    ls = _ls(tmp_path)
    with pytest.raises(NotFoundError, match="delta layer does not exist"):
        diff_layers(ls)
    agent_write(ls, "x")
    with pytest.raises(ValidationError, match="threshold"):
        diff_layers(ls, threshold=1.5)
    other = tmp_path / "other"
    other.mkdir()
    make_base(other, etype="i8", name="AGENTS.user.db")
    (other / "AGENTS.user.db").rename(tmp_path / "AGENTS.user.db")
    with pytest.raises(SchemaMismatchError):
        diff_layers(LayerSet.from_directory(tmp_path))

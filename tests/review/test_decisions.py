"""Accept, reject and promote on real layer files: decisions are events, nothing is deleted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sediment.errors import NotFoundError, ValidationError
from sediment.ops.propose import propose
from sediment.review import accept, get_proposal, list_proposals, promotable, promote, reject
from sediment.store import HUMAN_WRITABLE, LayerName, LayerSet, NewChunk
from sediment.store.events import DECISION, fold_proposals
from tests.review.helpers import agent_propose, agent_write, layer, make_base


@pytest.fixture
def ls(tmp_path: Path) -> LayerSet:
    make_base(tmp_path)
    return LayerSet.from_directory(tmp_path)


def test_accept_copies_into_user_and_records_a_decision(ls: LayerSet, tmp_path: Path) -> None:
    cid, pid = agent_propose(ls, "Billing calls need a token too.", kind="invariant",
                             confidence=0.8, sources=["docs/guide.md:1", 1])
    delta_before = layer(tmp_path, LayerName.DELTA)
    original = delta_before.get(cid)
    assert original is not None
    [out] = accept(ls, [pid], "checked with the billing team")
    assert out.changed and out.copied and out.action == "accepted"
    user = layer(tmp_path, LayerName.USER)
    copy = user.get(cid)
    assert copy is not None
    assert (copy.id, copy.kind, copy.content) == (cid, original.kind, original.content)
    assert copy.author == "human" and copy.confidence == 1.0
    assert copy.sources == (cid, "docs/guide.md:1", 1)
    assert copy.created_at_ms == original.created_at_ms
    delta = layer(tmp_path, LayerName.DELTA)
    assert np.array_equal(user.vector(user.id_index[cid]), delta.vector(delta.id_index[cid]))
    # the delta keeps everything it had, plus the decision
    assert delta.chunk_count == delta_before.chunk_count + 1
    decision = delta.get(out.decision_id or 0)
    assert decision is not None and decision.kind == DECISION
    assert decision.author == "human" and decision.sources == (pid, cid)
    data = json.loads(decision.content)
    assert data["event"] == "accept" and data["reason"] == "checked with the billing team"
    assert data["promoted_id"] == cid and data["proposal_id"] == pid
    assert fold_proposals(ls.events())[pid].status == "accepted"
    # precedence: the user copy now wins
    got = ls.get(cid)
    assert got is not None and got[0] is LayerName.USER


def test_accepting_twice_is_a_no_op(ls: LayerSet, tmp_path: Path) -> None:
    _, pid = agent_propose(ls, "A fact worth keeping.")
    accept(ls, [pid])
    before = {n: (tmp_path / n.file_name).read_bytes() for n in (LayerName.USER, LayerName.DELTA)}
    [again] = accept(ls, [pid])
    assert not again.changed and "already accepted" in again.message
    assert {n: (tmp_path / n.file_name).read_bytes() for n in before} == before


def test_reject_needs_a_reason_and_is_final(ls: LayerSet, tmp_path: Path) -> None:
    cid, pid = agent_propose(ls, "A doubtful claim.")
    with pytest.raises(ValidationError, match="reason"):
        reject(ls, [pid], "  ")
    [out] = reject(ls, [pid], "not supported by the docs")
    assert out.changed and out.action == "rejected"
    assert not (tmp_path / "AGENTS.user.db").exists()
    view = get_proposal(ls, pid)
    assert view.status == "rejected" and view.decisions[0].reason == "not supported by the docs"
    assert not reject(ls, [pid], "again")[0].changed
    delta = (tmp_path / "AGENTS.delta.db").read_bytes()
    with pytest.raises(ValidationError, match=r"already rejected \(not supported by the docs\)"):
        accept(ls, [pid])
    assert (tmp_path / "AGENTS.delta.db").read_bytes() == delta
    assert not (tmp_path / "AGENTS.user.db").exists()
    assert layer(tmp_path, LayerName.DELTA).get(cid) is not None


def test_rejecting_an_accepted_proposal_is_an_error(ls: LayerSet) -> None:
    _, pid = agent_propose(ls, "Accepted first.")
    accept(ls, [pid])
    with pytest.raises(ValidationError, match="already accepted"):
        reject(ls, [pid], "changed my mind")


def test_batch_is_checked_before_anything_is_written(ls: LayerSet, tmp_path: Path) -> None:
    _, good = agent_propose(ls, "Good one.")
    _, bad = agent_propose(ls, "Bad one.")
    reject(ls, [bad], "no")
    snapshot = (tmp_path / "AGENTS.delta.db").read_bytes()
    with pytest.raises(ValidationError, match=f"proposal {bad}"):
        accept(ls, [good, bad])
    assert (tmp_path / "AGENTS.delta.db").read_bytes() == snapshot
    assert not (tmp_path / "AGENTS.user.db").exists()


def test_unknown_proposal_names_the_proposal_of_a_chunk_id(ls: LayerSet) -> None:
    cid, pid = agent_propose(ls, "Some chunk.")
    with pytest.raises(NotFoundError, match=f"chunk {cid} is proposed by proposal {pid}"):
        accept(ls, [cid])
    with pytest.raises(NotFoundError, match="no proposal with id 999"):
        accept(ls, [999])


def test_list_and_filter(ls: LayerSet) -> None:
    _, a = agent_propose(ls, "First.")
    _, b = agent_propose(ls, "Second.")
    accept(ls, [a])
    assert [(v.proposal_id, v.status) for v in list_proposals(ls)] == [(a, "accepted"),
                                                                       (b, "pending")]
    assert [v.proposal_id for v in list_proposals(ls, "pending")] == [b]
    with pytest.raises(ValidationError, match="status"):
        list_proposals(ls, "maybe")


def test_proposal_from_local_is_accepted_from_its_delta_copy(ls: LayerSet,
                                                             tmp_path: Path) -> None:
    cid = agent_write(ls, "Learned in a session.", scope="local")
    pid = propose(ls, cid, actor="tester").proposal_id
    [out] = accept(ls, [pid])
    assert out.copied
    assert layer(tmp_path, LayerName.USER).get(cid) is not None


def test_a_crash_between_copy_and_decision_is_recovered(ls: LayerSet, tmp_path: Path) -> None:
    cid, pid = agent_propose(ls, "Half accepted.")
    delta = layer(tmp_path, LayerName.DELTA)
    c = delta.get(cid)
    assert c is not None
    ls.append(LayerName.USER, [NewChunk(c.kind, c.content, "human", 1.0, (cid,), id=cid)],
              delta.vector(delta.id_index[cid])[None, :], profile=None, allowed=HUMAN_WRITABLE)
    [out] = accept(ls, [pid])
    assert out.changed and not out.copied
    assert get_proposal(ls, pid).status == "accepted"


def test_a_different_user_version_blocks_acceptance(ls: LayerSet, tmp_path: Path) -> None:
    cid, pid = agent_propose(ls, "Agent version.")
    vec = layer(tmp_path, LayerName.DELTA).vector(0)[None, :]
    ls.append(LayerName.USER, [NewChunk("note", "Human version.", "human", 1.0, id=cid)], vec,
              profile=None, allowed=HUMAN_WRITABLE)
    with pytest.raises(ValidationError, match="different version in the user layer"):
        accept(ls, [pid])


def test_promote_copies_without_a_proposal(ls: LayerSet, tmp_path: Path) -> None:
    a = agent_write(ls, "Promote me.", sources=["docs/guide.md:2"])
    b, pid = agent_propose(ls, "Promote me too.")
    outs = promote(ls, [a, b], reason="obvious")
    assert [o.changed for o in outs] == [True, True]
    assert outs[0].proposal_id is None and outs[1].proposal_id == pid
    user = layer(tmp_path, LayerName.USER)
    assert user.get(a) is not None and user.get(b) is not None
    copy = user.get(a)
    assert copy is not None and copy.sources == (a, "docs/guide.md:2")
    assert get_proposal(ls, pid).status == "accepted"
    events = [json.loads(e.chunk.content) for e in ls.events() if e.kind == DECISION]
    assert {(e["context_id"], e["via"]) for e in events} == {(a, "promote"), (b, "proposal")}
    assert not any(o.changed for o in promote(ls, [a]))


def test_promote_unknown_ids_lists_them_all(ls: LayerSet, tmp_path: Path) -> None:
    a = agent_write(ls, "Exists.")
    with pytest.raises(NotFoundError, match=r"not in the delta layer .*: 98, 99"):
        promote(ls, [a, 98, 99])
    assert not (tmp_path / "AGENTS.user.db").exists()
    with pytest.raises(NotFoundError, match="1"):
        promotable(ls, [1])  # a base chunk is not in delta
    _, pid = agent_propose(ls, "Proposed.")
    with pytest.raises(ValidationError, match="meta"):
        promote(ls, [pid])
    with pytest.raises(ValidationError, match="at least one"):
        promote(ls, [])
    with pytest.raises(ValidationError, match="delta or local"):
        promote(ls, [a], source=LayerName.BASE)


def test_accept_with_edits_keeps_the_agents_text_and_records_the_reviewer(
        ls: LayerSet, tmp_path: Path) -> None:
    from sediment.review import AlreadyDecided, accept_edited, diff_layers

    cid, pid = agent_propose(ls, "Billing calls need a tokn.", kind="invariant",
                             sources=["docs/guide.md:1"])
    edited = "Billing calls need a token."
    vector = ls.vector(LayerName.DELTA, cid) * -1  # stands in for the edit's embedding
    out = accept_edited(ls, pid, f"  {edited}\n", vector, "typo", reviewer="alice")
    assert out.changed and out.copied and out.action == "accepted"
    copy = layer(tmp_path, LayerName.USER).get(cid)
    assert copy is not None and copy.content == edited and copy.author == "human"
    assert copy.sources == (cid, "docs/guide.md:1")  # provenance: the agent's chunk first
    agents = layer(tmp_path, LayerName.DELTA).get(cid)
    assert agents is not None and agents.content == "Billing calls need a tokn."
    [decision] = get_proposal(ls, pid).decisions
    assert decision.reviewer == "alice" and decision.reason == "typo"
    raw = layer(tmp_path, LayerName.DELTA).get(decision.id)
    assert raw is not None and json.loads(raw.content)["edited"] is True
    report = diff_layers(ls)
    assert [c.status for c in report.chunks if c.chunk.id == cid] == ["accepted"]
    assert not [m for m in report.conflicts if m.delta.id == cid]
    with pytest.raises(AlreadyDecided, match="already accepted, decided by alice"):
        accept_edited(ls, pid, "Another edit.", vector, reviewer="bob")
    with pytest.raises(ValidationError, match="empty"):
        accept_edited(ls, pid, " \n", vector)


def test_accept_with_unchanged_text_is_a_plain_accept(ls: LayerSet, tmp_path: Path) -> None:
    from sediment.review import accept_edited

    cid, pid = agent_propose(ls, "Deploys freeze on Fridays.")
    out = accept_edited(ls, pid, "Deploys freeze on Fridays.", ls.vector(LayerName.DELTA, cid),
                        reviewer="bob")
    assert out.changed and out.copied
    raw = layer(tmp_path, LayerName.DELTA).get(out.decision_id or 0)
    assert raw is not None and "edited" not in json.loads(raw.content)
    copy = layer(tmp_path, LayerName.USER).get(cid)
    assert copy is not None and copy.content == "Deploys freeze on Fridays."

"""The layers page's data: counts, profile and signature status from the real files."""

from __future__ import annotations

from pathlib import Path

from sediment.review import keygen, sign
from sediment.server.web._app import visible
from sediment.server.web._views import layers
from sediment.store import LayerSet
from tests.mcp.conftest import make_store


def test_layers_report_counts_profile_and_signature(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    ls = LayerSet.from_directory(store)
    base = next(r for r in layers(ls, None, None) if r["name"] == "base")
    assert base["chunks"] == 3 and base["events"] == 0 and base["signature"] == "unsigned"
    assert dict(base["kinds"]) == {"canonical": 2, "invariant": 1}
    assert base["profile"]["dim"] == 384
    private, public, fp = keygen(tmp_path / "key")
    sign(store / "AGENTS.db", private)
    unverified = next(r for r in layers(ls, None, None) if r["name"] == "base")
    assert "not verified" in unverified["signature"]
    ok = next(r for r in layers(ls, public, None) if r["name"] == "base")["signature"]
    assert ok == f"signature verifies ({fp})"
    _, other_public, _ = keygen(tmp_path / "other")
    bad = next(r for r in layers(ls, other_public, None) if r["name"] == "base")["signature"]
    assert bad.startswith("signature does NOT verify")
    assert not next(r for r in layers(ls, None, None) if r["name"] == "user")["present"]


def test_control_characters_are_shown_as_escapes() -> None:
    assert visible("a\x1b[31mred\x07\nnext\tline") == "a\\x1b[31mred\\x07\nnext\tline"


def test_decisions_record_the_reviewer_and_name_the_first(tmp_path: Path) -> None:
    import pytest

    from sediment.embed import HashEmbedder
    from sediment.ops.propose import propose
    from sediment.ops.requests import WriteRequest, parse
    from sediment.ops.write import write_context
    from sediment.review import AlreadyDecided, accept, get_proposal, reject

    ls = LayerSet.from_directory(make_store(tmp_path / "store"))
    cid = write_context(ls, HashEmbedder(), parse(WriteRequest, {
        "content": "A finding", "kind": "note", "confidence": 0.5, "scope": "delta"}),
        actor="tester")
    pid = propose(ls, cid, actor="tester").proposal_id
    [done] = accept(ls, [pid], reviewer="alice")
    assert done.changed and done.decided_by is None
    [again] = accept(ls, [pid], reviewer="bob")
    assert not again.changed and again.decided_by == "alice"
    assert "already accepted by alice" in again.message
    with pytest.raises(AlreadyDecided, match="decided by alice") as caught:
        reject(ls, [pid], "no", reviewer="bob")
    assert caught.value.decided_by == "alice" and caught.value.status == "accepted"
    [d] = get_proposal(ls, pid).decisions
    assert d.reviewer == "alice" and d.author == "human"

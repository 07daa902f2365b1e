"""Decisions made with the CLI record the reviewer too: ``--reviewer``, else
``SEDIMENT_REVIEWER``, else ``SEDIMENT_ACTOR``, else the OS user."""

from __future__ import annotations

from pathlib import Path

from sediment.config import Environment, process_actor
from sediment.embed import HashEmbedder
from sediment.ops.propose import propose
from sediment.ops.requests import WriteRequest, parse
from sediment.ops.write import write_context
from sediment.store import LayerSet
from tests.conftest import Runner
from tests.mcp.conftest import make_store


def _proposals(store: Path, n: int) -> list[int]:
    ls, emb = LayerSet.from_directory(store), HashEmbedder()
    out = []
    for i in range(n):
        cid = write_context(ls, emb, parse(WriteRequest, {
            "content": f"Finding {i}: the cache is warmed at start.", "kind": "note",
            "confidence": 0.5, "scope": "delta"}), actor="tester")
        out.append(propose(ls, cid, actor="tester").proposal_id)
    return out


def _reviewer(sediment: Runner, store: Path, pid: int) -> str:
    shown = sediment("proposals", "show", str(pid), "--dir", str(store), "--json").json()
    reviewer: str = shown["decisions"][0]["reviewer"]
    return reviewer


def test_cli_decisions_name_the_reviewer(sediment: Runner, tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    first, second, third, fourth = _proposals(store, 4)
    ok = sediment("proposals", "accept", str(first), "--reviewer", "Carol", "--dir", str(store))
    assert ok.code == 0, ok.err
    assert _reviewer(sediment, store, first) == "Carol"
    text = sediment("proposals", "show", str(first), "--dir", str(store)).out
    assert "accept by Carol" in text
    sediment("proposals", "reject", str(second), "--reason", "vague", "--dir", str(store),
             env={"SEDIMENT_REVIEWER": "Dan"})
    assert _reviewer(sediment, store, second) == "Dan"
    sediment("proposals", "reject", str(third), "--reason", "vague", "--dir", str(store),
             env={"SEDIMENT_ACTOR": "erin"})
    assert _reviewer(sediment, store, third) == "erin"
    sediment("proposals", "accept", str(fourth), "--dir", str(store))
    assert _reviewer(sediment, store, fourth) == process_actor(Environment.read({})) != ""


def test_a_blank_reviewer_is_refused(sediment: Runner, tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    [pid] = _proposals(store, 1)
    bad = sediment("proposals", "accept", str(pid), "--reviewer", " ", "--dir", str(store))
    assert bad.code == 1 and bad.err.startswith("Error: --reviewer"), bad.err
    assert sediment("proposals", "show", str(pid), "--dir", str(store),
                    "--json").json()["status"] == "pending"

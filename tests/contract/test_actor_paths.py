"""Per-actor visibility (issue #25) on the paths an audit found wrong, on the layer files and
on a real PostgreSQL, through the Python API (``sediment.open``, the services every adapter
calls) and the real ``sediment`` command.

- A local note its actor proposed is everyone's: the proposal copied it to delta, where the
  queue shows it, and an accept copies it to user. Hiding its id from every other actor
  (it is in its writer's ``meta.write`` in the local layer) left accepted knowledge out of
  the team's search and ``get``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment import open as open_store
from tests.conftest import Runner
from tests.pg.team import seed_project

VPN = "Deploys need the VPN and the narwhal gateway."
SCRATCH = "Bob's scratch note: the quokka branch deploys from wip-42."


@pytest.fixture(params=["files", "pg"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "pg":
        url: str = request.getfixturevalue("pg_url")
        seed_project(url, tmp_path)
        return url
    return str(tmp_path)


def _where(location: str) -> list[str]:
    return ["--store", location] if location.startswith("postgresql") else ["--dir", location]


def _found(location: str, actor: str, chunk_id: int, query: str) -> tuple[bool, bool]:
    """Whether ``actor`` finds ``chunk_id`` by search (lexical and hybrid) and by ``get``."""
    with open_store(location, embedder="hash", actor=actor) as store:
        hits = [h.chunk.id for mode in ("lexical", "hybrid")
                for h in store.search(query, k=20, mode=mode)]
        return chunk_id in hits, store.get(chunk_id) is not None


def test_a_proposed_local_note_is_everyones(location: str, sediment: Runner,
                                            tmp_path: Path) -> None:
    """bob proposes a local note: alice finds it (search and get) while it waits in the
    queue and once a reviewer accepted it; bob's other local note stays his alone."""
    with open_store(location, embedder="hash", actor="bob") as bob:
        proposed = bob.write(VPN, kind="note", confidence=0.5)
        private = bob.write(SCRATCH, kind="note", confidence=0.5)
        pid = bob.propose(proposed).proposal_id
    assert _found(location, "bob", proposed, VPN) == (True, True)
    assert _found(location, "alice", proposed, VPN) == (True, True), "pending"
    r = sediment("proposals", "accept", str(pid), *_where(location), cwd=tmp_path)
    assert r.code == 0, r.err
    assert _found(location, "alice", proposed, VPN) == (True, True), "accepted"
    assert _found(location, "alice", private, SCRATCH) == (False, False)
    assert _found(location, "bob", private, SCRATCH) == (True, True)

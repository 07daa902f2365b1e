"""Per-actor visibility (issue #25) on the paths an audit found wrong, on the layer files and
on a real PostgreSQL, through the Python API (``sediment.open``, the services every adapter
calls) and the real ``sediment`` command.

- A local note its actor proposed is everyone's: the proposal copied it to delta, where the
  queue shows it, and an accept copies it to user. Hiding its id from every other actor
  (it is in its writer's ``meta.write`` in the local layer) left accepted knowledge out of
  the team's search and ``get``.
- A layer's summary (an MCP resource, ``agents_sources``, the web page's layers page)
  counts and lists only what its reader may read: it listed other actors' local note ids,
  counted them, and on the layer files named their memories' kinds (``memory.fact.alice``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from sediment import open as open_store
from sediment.errors import ValidationError
from tests.conftest import Runner
from tests.pg.team import seed_project, serve_http

TIMEOUT = 180

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


# -- what a layer's summary tells another actor ------------------------------------------------
def _resource(base: str, token: str, uri: str) -> str:
    async def main() -> str:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        with anyio.fail_after(TIMEOUT):
            async with http, Client(streamable_http_client(f"{base}/mcp",
                                                           http_client=http)) as c:
                r = await c.read_resource(uri)
                return "".join(getattr(x, "text", "") for x in r.contents)
    return anyio.run(main)


def _layers_page(base: str, token: str) -> str:
    with httpx.Client(base_url=base, timeout=TIMEOUT, follow_redirects=False) as c:
        nonce = re.search(r'name="csrf" value="([^"]+)"', c.get("/ui/login").text)
        assert nonce
        signed = c.post("/ui/login", data={"csrf": nonce.group(1), "token": token},
                        headers={"Origin": base})
        assert signed.status_code == 303, signed.text
        page = c.get("/ui/layers")
        assert page.status_code == 200, page.text
        return page.text


def test_a_layer_summary_counts_only_what_its_reader_may_read(
        location: str, sediment: Runner, tmp_path: Path) -> None:
    """The local layer's summary (the MCP resource ``agentsdb://layers/local``), its line in
    ``agents_sources`` and its card on the web page's layers page, as bob: no id, count or
    kind of alice's note, her project memory and their events (on the layer files the page
    listed ``memory.fact.alice 1``; both listed her note's id and counted it)."""
    where = _where(location)
    with open_store(location, embedder="hash", actor="alice") as alice:
        note = alice.write(SCRATCH.replace("Bob", "Alice"), kind="note", confidence=0.5)
        memory = int(alice.save_memory("The zanzibar vault code is 4711.", "fact",
                                       scope="project")["chunk_id"])
    with open_store(location, embedder="hash", actor="bob") as bob:
        mine = bob.write(VPN, kind="note", confidence=0.5)
    tokens = {}
    for actor in ("alice", "bob"):
        r = sediment("token", "create", "--actor", actor, "--role", "writer", "--json",
                     *(where if location.startswith("postgresql") else []), cwd=tmp_path)
        assert r.code == 0, r.err
        tokens[actor] = r.json()["token"]
    with serve_http(where, tmp_path, start_s=TIMEOUT) as srv:
        seen = {}
        for actor, token in tokens.items():
            summary = json.loads(_resource(srv.base, token, "agentsdb://layers/local"))
            sources = httpx.post(f"{srv.base}/tools/agents_sources", json={},
                                 headers={"Authorization": f"Bearer {token}"},
                                 timeout=TIMEOUT).json()["result"]
            [local] = [la for la in sources["layers"] if la["name"] == "local"]
            page = _layers_page(srv.base, token)
            card = page.split('id="layer-local"', 1)[1].split("</section>", 1)[0]
            seen[actor] = (summary, local["chunks"], card)
    summary, count, card = seen["bob"]
    assert note not in summary["chunk_ids"] and memory not in summary["chunk_ids"], summary
    assert mine in summary["chunk_ids"], summary
    assert count == 1, count
    assert "alice" not in card, card
    assert summary["chunks"] == len(summary["chunk_ids"]), summary
    summary, count, card = seen["alice"]
    assert note in summary["chunk_ids"] and mine not in summary["chunk_ids"], summary
    assert count == 1, count


def test_a_memory_relates_only_to_what_its_actor_may_read(location: str) -> None:
    """``save_memory`` checks that a ``related_to`` chunk id exists: as bob, alice's local
    note reads as absent, exactly as an id no layer holds (it was checked as the machine's
    owner, so bob could tell her notes' ids from missing ones, and cite them)."""
    with open_store(location, embedder="hash", actor="alice") as alice:
        note = alice.write(SCRATCH.replace("Bob", "Alice"), kind="note", confidence=0.5)
        assert alice.save_memory("The deploy branch is in my scratch note.", "fact",
                                 scope="project", related_to=[note])["status"] == "created"
    said = {}
    with open_store(location, embedder="hash", actor="bob") as bob:
        for what, cid in (("private", note), ("missing", 3_000_000_000)):
            for scope in ("project", "global"):
                with pytest.raises(ValidationError) as exc:
                    bob.save_memory(f"Deploys follow note {scope}.", "fact", scope=scope,
                                    related_to=[cid])
                said[what, scope] = str(exc.value).replace(str(cid), "ID")
    assert said["private", "project"] == said["missing", "project"], said
    assert said["private", "global"] == said["missing", "global"], said


def test_a_promote_records_its_reviewer(location: str, sediment: Runner,
                                        tmp_path: Path) -> None:
    """``sediment promote`` is a decision (an accept recorded in delta) and records who made
    it, as ``proposals accept`` does: ``--reviewer``, else ``SEDIMENT_ACTOR``. It recorded
    nobody, so the queue and ``inspect`` said only "human"."""
    with open_store(location, embedder="hash", actor="bob") as bob:
        first = bob.write(VPN, kind="note", confidence=0.5, scope="delta")
        second = bob.write(SCRATCH, kind="note", confidence=0.5, scope="delta")
    for cid, extra in ((first, ["--reviewer", "carol"]), (second, [])):
        r = sediment("promote", "--ids", str(cid), "--yes", *extra, *_where(location),
                     cwd=tmp_path, env={"SEDIMENT_ACTOR": "dave"})
        assert r.code == 0, r.err
    with open_store(location, embedder="hash", actor="bob") as bob:
        got = {e.data.get("context_id"): e.data.get("reviewer")
               for e in bob.layerset.events() if e.kind == "meta.proposal_decision"}
    assert got == {first: "carol", second: "dave"}, got

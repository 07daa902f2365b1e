"""A writer's global memory on the team server is a proposal that a reviewer sees and
decides with the same commands as over the layer files (``proposals list|accept``), and a
pull -> push round trip keeps it reviewable: on PostgreSQL, as in the files, the proposal's
memory chunk and events sit in the project's delta layer and an accepted one in its user
layer, so one fold over the proposal events serves both backends. A push refuses an id
that any table of the project (chunks, memories, context) already uses for another row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from sediment.format import Chunk, encode_layer
from tests.conftest import Runner
from tests.pg.layers import DIM, EMBEDDER
from tests.pg.team import TeamServer, call, mint, seed_project, team_server
from tests.web.conftest import sign_in

HASH = {"SEDIMENT_EMBEDDER": "hash"}
TEXT = "Releases are tagged from the main branch only, never from a feature branch."


def _mcp(srv: TeamServer, token: str, tool: str, args: dict[str, Any]) -> Any:
    async def main() -> Any:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        with anyio.fail_after(60):
            async with http, Client(streamable_http_client(srv.mcp, http_client=http)) as c:
                r = await c.call_tool(tool, args)
        assert not r.is_error, r.content
        return r.structured_content
    return anyio.run(main)


def _json(run: Any) -> Any:
    assert run.code == 0, run.out + run.err
    return json.loads(run.out)


def _pending(sediment: Runner, url: str) -> list[dict[str, Any]]:
    listed = _json(sediment("proposals", "list", "--store", url, "--json"))
    rows: list[dict[str, Any]] = listed["proposals"] if isinstance(listed, dict) else listed
    return [p for p in rows if p["status"] == "pending"]


def test_a_writers_global_memory_is_reviewed_on_the_team_server(
        sediment: Runner, pg_url: str, tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    alice, bob = mint(pg_url, "alice", "writer"), mint(pg_url, "bob", "writer")
    rev = mint(pg_url, "rev", "reviewer")
    with team_server(pg_url, tmp_path) as srv:
        saved = _mcp(srv, alice, "save_memory", {"content": TEXT, "category": "convention",
                                                 "scope": "global"})
        assert saved["status"] == "proposed", saved
        memory_id = int(saved["chunk_id"])
        pending = _pending(sediment, pg_url)
        assert [(p["context_id"], p["chunk"]["content"]) for p in pending] == \
            [(memory_id, TEXT)]
        web = sign_in(srv.base, "rev", rev)
        try:
            queue = web.get("/ui/queue").text
        finally:
            web.close()
        assert TEXT in queue and "1 pending proposal" in queue
        before = _mcp(srv, bob, "recall_memories", {"query": "release tags main branch",
                                                    "scope": "global"})
        assert not before["memories"]
        accepted = sediment("proposals", "accept", str(pending[0]["proposal_id"]),
                            "--store", pg_url)
        assert accepted.code == 0, accepted.err
        assert not _pending(sediment, pg_url)
        after = _mcp(srv, bob, "recall_memories", {"query": "release tags main branch",
                                                   "scope": "global"})
        assert [(m["id"], m["content"]) for m in after["memories"]] == \
            [(f"p{memory_id}", TEXT)]


def test_a_pull_push_round_trip_keeps_a_memory_proposal_reviewable(
        sediment: Runner, pg_url: str, tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    alice = mint(pg_url, "alice", "writer")
    with team_server(pg_url, tmp_path) as srv, httpx.Client(base_url=srv.base,
                                                          timeout=60) as http:
        saved = call(http, alice, "save_memory", {"content": TEXT, "category": "convention",
                                                  "scope": "global"})
        assert saved.status_code == 200, saved.text
        assert saved.json()["result"]["status"] == "proposed"
    copy = tmp_path / "copy"
    copy.mkdir()
    assert sediment("pull", "--store", pg_url, "--dir", str(copy)).code == 0
    pushed = sediment("push", "--store", pg_url, "--dir", str(copy))
    assert pushed.code == 0, pushed.err
    again = tmp_path / "again"
    again.mkdir()
    pulled = sediment("pull", "--store", pg_url, "--dir", str(again))
    assert pulled.code == 0, pulled.err
    valid = sediment("validate", *sorted(str(p) for p in again.glob("*.db")))
    assert valid.code == 0, valid.out + valid.err
    (pending,) = _pending(sediment, pg_url)
    assert pending["chunk"] is not None and pending["chunk"]["content"] == TEXT
    accepted = sediment("proposals", "accept", str(pending["proposal_id"]), "--store", pg_url)
    assert accepted.code == 0, accepted.err
    shown = _json(sediment("memory", "show", f"p{pending['context_id']}", "--store", pg_url,
                           "--json", env={**HASH, "SEDIMENT_ACTOR": "bob"}))
    assert shown["memory"]["content"] == TEXT and shown["memory"]["scope"] == "global"


def _layer_with(path: Path, cid: int, text: str) -> None:
    path.write_bytes(encode_layer([Chunk(cid, "note", text, "mcp", 0.5, 1, ())],
                                  EMBEDDER.embed([text]), dim=DIM,
                                  metadata={"v": 1,
                                            "embedding_profile": EMBEDDER.profile.to_dict()}))


def test_a_push_refuses_ids_the_projects_memories_or_context_use(
        sediment: Runner, pg_url: str, tmp_path: Path) -> None:
    env = {**HASH, "SEDIMENT_ACTOR": "alice", "SEDIMENT_EMBED_DIM": str(DIM)}
    seed = tmp_path / "seed"
    seed.mkdir()
    _layer_with(seed / "AGENTS.db", 1, "A compiled chunk that fixes the vector schema.")
    assert sediment("push", "--store", pg_url, "--dir", str(seed)).code == 0
    memory = _json(sediment("memory", "save", "Alice works on the parser.", "--category",
                            "fact", "--scope", "project", "--store", pg_url, "--json",
                            env=env))
    item = _json(sediment("context", "store", "Parse the header first.", "--type", "task",
                          "--store", pg_url, "--json", env=env))
    for used in (int(memory["chunk_id"]), int(str(item["id"]).lstrip("c"))):
        other = tmp_path / f"other{used}"
        other.mkdir()
        _layer_with(other / "AGENTS.local.db", used, "An unrelated note under a used id.")
        refused = sediment("push", "--store", pg_url, "--dir", str(other))
        assert refused.code == 1 and str(used) in refused.err, (used, refused.err)
        assert "only add new ids" in refused.err or "already uses" in refused.err

"""Two actors with two tokens against one real HTTP server, over the layer files and over a
PostgreSQL store: the seed's lifecycle for both at once, and isolation for every tool and
action (official MCP SDK client); then the CLI reads what the server wrote."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from tests.conftest import Runner
from tests.mcp.conftest import HttpServer, make_store, start_http, stop
from tests.memory.conftest import BACKENDS
from tests.pg.team import seed_project, team_server

TIMEOUT = 90


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture(params=BACKENDS)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """The options naming the server's store: a layer directory, or a PostgreSQL store
    (with one chunk, so ``serve`` has a schema)."""
    if request.param == "files":
        return ["--dir", str(make_store(tmp_path / "store"))]
    url: str = request.getfixturevalue("pg_url")
    seed_project(url, tmp_path)
    return ["--store", url]


@pytest.fixture
def tokens(sediment: Runner, where: list[str]) -> dict[str, str]:
    on = where if where[0] == "--store" else []
    out = {}
    for actor, role in (("alice", "writer"), ("bob", "writer"), ("carol", "reader")):
        r = sediment("token", "create", "--actor", actor, "--role", role, "--json", *on)
        assert r.code == 0, r.err
        out[actor] = r.json()["token"]
    return out


@pytest.fixture
def server(tmp_path: Path, tokens: dict[str, str], where: list[str],
           monkeypatch: pytest.MonkeyPatch) -> Iterator[HttpServer]:
    monkeypatch.setenv("SEDIMENT_MEMORY_DEDUP", "0.7")
    monkeypatch.setenv("SEDIMENT_MEMORY_FLUSH_SECONDS", "3600")
    if where[0] == "--dir":
        srv = start_http(Path(where[1]), token=None)
        yield srv
        stop(srv.process)
        return
    with team_server(where[1], tmp_path) as team:
        yield HttpServer(team.mcp, int(team.base.rsplit(":", 1)[1]), team.process)


def client(url: str, token: str) -> tuple[Any, Client]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return http, Client(streamable_http_client(url, http_client=http))


async def call(c: Client, tool: str, args: dict[str, Any], *, ok: bool = True) -> Any:
    r = await c.call_tool(tool, args)
    assert r.is_error is (not ok), (tool, args, text_of(r))
    return r.structured_content if ok else text_of(r)


def test_tokens_are_required_on_loopback_once_any_exists(server: HttpServer,
                                                         tokens: dict[str, str]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer sdm_00000000_" + "x" * 43},
                    {"Authorization": tokens["alice"]}):
        r = httpx.post(server.url, json=body, headers=headers, timeout=10)
        assert r.status_code == 401, headers


def test_lifecycle_for_two_actors_at_once_and_isolation(
        server: HttpServer, tokens: dict[str, str], sediment: Runner, where: list[str]
) -> None:
    ids: dict[str, dict[str, str]] = {"alice": {}, "bob": {}}

    async def main() -> None:
        ha, a = client(server.url, tokens["alice"])
        hb, b = client(server.url, tokens["bob"])
        hc, c = client(server.url, tokens["carol"])
        with anyio.fail_after(TIMEOUT):
            async with ha, hb, hc, a, b, c:
                for who, cl in (("alice", a), ("bob", b)):
                    out = await call(cl, "save_memory", {
                        "content": f"{who} indents Python with 2 spaces per level",
                        "category": "preference", "source": "explicit"})
                    assert out["status"] == "created"
                    ids[who]["first"] = out["id"]
                    out = await call(cl, "save_memory", {
                        "content": f"The {who} service listens on port 8000",
                        "category": "fact", "scope": "project", "context": "ops"})
                    ids[who]["project"] = out["id"]
                    ids[who]["project_at"] = f"p{out['chunk_id']}"
                for who, cl in (("alice", a), ("bob", b)):
                    got = await call(cl, "recall_memories", {"query": "python indentation"})
                    assert {m["actor"] for m in got["memories"]} == {who}
                    assert got["memories"][0]["id"] == ids[who]["first"]
                    # a correction supersedes the old memory
                    out = await call(cl, "save_memory", {
                        "content": f"{who} indents Python with 4 spaces per level",
                        "category": "correction", "source": "corrected"})
                    assert out["status"] == "updated", out
                    assert out["superseded_id"] == ids[who]["first"]
                    assert out["looks_like_correction"] is True
                    ids[who]["second"] = out["id"]
                    ids[who]["second_at"] = f"u{out['chunk_id']}"
                    got = await call(cl, "recall_memories", {"query": "python indentation"})
                    shown = [m["id"] for m in got["memories"]]
                    assert ids[who]["second"] in shown and ids[who]["first"] not in shown
                # isolation: every tool and action against the other actor's memories,
                # named by where they are stored (a handle such as p1 is per actor: the
                # other actor's p1 is their own memory)
                for who, cl, other in (("alice", a, "bob"), ("bob", b, "alice")):
                    theirs = [ids[other]["project_at"]]
                    if ids[other]["second_at"] != ids[who]["second_at"]:
                        theirs.append(ids[other]["second_at"])
                    for mid in theirs:
                        text = await call(cl, "manage_memory", {
                            "action": "update", "memory_id": mid,
                            "updates": {"content": "hijacked"}}, ok=False)
                        assert "no such memory" in text
                        text = await call(cl, "manage_memory", {
                            "action": "delete", "memory_id": mid}, ok=False)
                        assert "no such memory" in text
                    got = await call(cl, "manage_memory", {"action": "list", "limit": 100})
                    assert {m["actor"] for m in got["memories"]} == {who}
                    got = await call(cl, "recall_memories", {"query": f"{other} service port",
                                                             "limit": 50})
                    assert {m["actor"] for m in got["memories"]} <= {who}
                # update keeps context; delete hides at once
                out = await call(a, "manage_memory", {
                    "action": "update", "memory_id": ids["alice"]["project"],
                    "updates": {"content": "The alice service listens on port 9000"}})
                assert out["context"] == "ops"
                ids["alice"]["project2"] = out["id"]
                await call(a, "manage_memory", {"action": "delete",
                                                "memory_id": ids["alice"]["project2"]})
                got = await call(a, "recall_memories", {"query": "service port"})
                assert ids["alice"]["project2"] not in [m["id"] for m in got["memories"]]
                # a relationship must name a chunk of the project's layers
                text = await call(a, "save_memory", {
                    "content": "The parser is in src/p.py", "category": "fact",
                    "scope": "project", "related_to": [987654321]}, ok=False)
                assert "chunk 987654321 does not exist" in text
                # reader role: recall yes, save and change no
                await call(c, "recall_memories", {"query": "anything"})
                text = await call(c, "save_memory", {"content": "x", "category": "fact"},
                                  ok=False)
                assert "needs the write permission" in text
                # forget_all: refused without confirm, then only the caller's memories
                text = await call(b, "manage_memory", {"action": "forget_all"}, ok=False)
                assert "confirm" in text
                out = await call(b, "manage_memory", {"action": "forget_all",
                                                      "confirm": True})
                assert (out["forgotten"], out["scopes"]) == (1, ["project"])
                out = await call(b, "manage_memory", {"action": "forget_all",
                                                      "confirm": True, "scope": "user"})
                assert (out["forgotten"], out["scopes"]) == (1, ["user"])
                got = await call(b, "manage_memory", {"action": "list"})
                assert got["memories"] == []
                got = await call(a, "manage_memory", {"action": "list"})
                assert [m["id"] for m in got["memories"]] == [ids["alice"]["second"]]

    anyio.run(main)
    stop(server.process)  # flushes the use counts on exit
    listed = sediment("memory", "list", "--actor", "alice", *where, "--json").json()
    (mine,) = listed["memories"]
    assert mine["id"] == ids["alice"]["second"]
    # alice's one recall after the correction that returned it (the floor leaves it out of
    # her unrelated "bob service port" queries); bob's none
    assert mine["use_count"] == 1
    bob = sediment("memory", "list", "--actor", "bob", *where, "--json").json()
    assert bob["total"] == 0
    shown = sediment("memory", "show", ids["alice"]["second"], "--actor", "alice", *where,
                     "--json").json()
    assert [v["id"] for v in shown["versions"]] == [ids["alice"]["second"],
                                                    ids["alice"]["first"]]
    assert json.dumps(shown).count("hijacked") == 0
    assert os.environ["SEDIMENT_DATA_DIR"]

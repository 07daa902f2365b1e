"""Two tokens, every memory and context tool, both routes (the HTTP API and MCP over
streamable HTTP) of a real team server: bob never reads or changes alice's memories or
context; a reader only reads. The store binds the actor in SQL; these tests prove the
whole path does."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from tests.pg.team import TeamServer, call, mint, seed_project, team_server

SECRET = "zanzibar"
Invoke = Callable[[str, str, dict[str, Any]], tuple[bool, Any]]


def _http(srv: TeamServer) -> Invoke:
    def invoke(token: str, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
        with httpx.Client(base_url=srv.base, timeout=60) as http:
            r = call(http, token, tool, args)
        body = r.json()
        return r.status_code == 200, body.get("result", body)
    return invoke


def _mcp(srv: TeamServer) -> Invoke:
    def invoke(token: str, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
        async def main() -> tuple[bool, Any]:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            with anyio.fail_after(60):
                async with http, Client(streamable_http_client(srv.mcp,
                                                               http_client=http)) as c:
                    r = await c.call_tool(tool, args)
            text = "\n".join(getattr(x, "text", "") for x in r.content)
            return not r.is_error, r.structured_content if not r.is_error else text
        return anyio.run(main)
    return invoke


@pytest.mark.parametrize("route", ["http", "mcp"])
def test_bob_never_reaches_alices_memories_or_context(pg_url: str, tmp_path: Path,
                                                      route: str) -> None:
    seed_project(pg_url, tmp_path)
    alice, bob = mint(pg_url, "alice", "writer"), mint(pg_url, "bob", "writer")
    with team_server(pg_url, tmp_path, {"SEDIMENT_MEMORY_FLUSH_SECONDS": "3600"}) as srv:
        run = _http(srv) if route == "http" else _mcp(srv)

        def ok(token: str, tool: str, args: dict[str, Any]) -> Any:
            good, body = run(token, tool, args)
            assert good, (tool, args, body)
            return body

        saved = {
            "user": ok(alice, "save_memory", {"content": f"The {SECRET} vault code is 4711.",
                                              "category": "fact"}),
            "project": ok(alice, "save_memory", {
                "content": f"The {SECRET} service listens on port 9000.", "category": "fact",
                "scope": "project", "context": "ops"}),
            "proposal": ok(alice, "save_memory", {
                "content": f"Every {SECRET} release needs two reviewers.",
                "category": "convention", "scope": "global"}),
        }
        # Alice's memories by their stored ids, and by her handles (u1, p1, p2), which name
        # Bob's own memories when he has any, so they must not reach hers either.
        mine = {k: f"{'u' if k == 'user' else 'p'}{v['chunk_id']}" for k, v in saved.items()}
        mine |= {f"{k} handle": str(v["id"]) for k, v in saved.items()}
        item = ok(alice, "store_context", {"content": f"The {SECRET} deploy uses blue/green.",
                                           "context_type": "task"})["id"]
        ok(alice, "store_context", {"content": f"Restart {SECRET} with make bounce.",
                                    "context_type": "skill", "tags": ["ops"]})
        ok(alice, "store_iteration_result", {"iteration": 1, "summary": f"{SECRET} wired",
                                             "success": False, "error": f"{SECRET} broke"})
        ok(alice, "mark_useful", {"item_id": item, "helpful": True})
        before = ok(alice, "get_context_stats", {})
        assert before["total"] == 4

        seen: list[Any] = []

        def as_bob(tool: str, args: dict[str, Any], *, allowed: bool = True) -> Any:
            good, body = run(bob, tool, args)
            seen.append(body)
            assert good is allowed, (tool, args, body)
            return body

        got = as_bob("recall_memories", {"query": "vault code service port release",
                                         "limit": 50})
        assert got["memories"] == []
        for scope in ("user", "project", "global"):
            as_bob("recall_memories", {"query": "vault code", "scope": scope})
        assert as_bob("manage_memory", {"action": "list", "limit": 1000})["memories"] == []
        for mid in mine.values():
            text = as_bob("manage_memory", {"action": "update", "memory_id": mid,
                                            "updates": {"content": "hijacked"}}, allowed=False)
            assert "no such memory" in json.dumps(text)
            as_bob("manage_memory", {"action": "delete", "memory_id": mid}, allowed=False)
        assert as_bob("manage_memory", {"action": "forget_all",
                                        "confirm": True})["forgotten"] == 0
        out = as_bob("get_relevant_context", {"query": "deploy restart wired broke",
                                              "min_score": 0.0, "include_archived": True,
                                              "max_tokens": 500})
        assert out["items"] == []
        assert as_bob("get_iteration_history", {"last_n": 100})["iterations"] == []
        assert as_bob("get_skills", {"min_score": 0.0})["skills"] == []
        as_bob("mark_useful", {"item_id": item, "helpful": False}, allowed=False)
        as_bob("summarize_old_context", {"older_than_iterations": 1})
        assert as_bob("prune_low_value_context", {"min_score": 1.0})["count"] == 0
        assert as_bob("get_context_stats", {})["total"] == 0
        as_bob("health_check", {})
        assert SECRET not in json.dumps(seen)

        # alice's are all there, unchanged
        assert ok(alice, "get_context_stats", {}) == before
        listed = ok(alice, "manage_memory", {"action": "list", "limit": 100})["memories"]
        assert sorted(m["id"] for m in listed) == sorted(str(v["id"]) for v in saved.values())
        got = ok(alice, "get_relevant_context", {"query": f"{SECRET} deploy", "min_score": 0.0})
        assert item in [i["id"] for i in got["items"]]
    with psycopg.connect(pg_url) as conn:
        owners = conn.execute("SELECT DISTINCT owner FROM memories").fetchall()
        actors = conn.execute("SELECT DISTINCT actor FROM context_rows").fetchall()
    assert owners == [("alice",)] and actors == [("alice",)]


def test_every_endpoint_answers_bob_without_alices_data(pg_url: str, tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    alice, bob = mint(pg_url, "alice", "writer"), mint(pg_url, "bob", "writer")
    with team_server(pg_url, tmp_path) as srv, httpx.Client(base_url=srv.base,
                                                          timeout=60) as http:
        assert call(http, alice, "save_memory", {"content": f"{SECRET} is alice's",
                                                 "category": "fact"}).status_code == 200
        auth = {"Authorization": f"Bearer {bob}"}
        for path in ("/health", "/tools/list", "/agents/list", "/openapi.json"):
            r = http.get(path, headers=auth)
            assert r.status_code == 200 and SECRET not in r.text, path
        r = http.post("/tools/agents_search", json={"query": "what is alice's"}, headers=auth)
        assert r.status_code == 200 and SECRET not in r.text


def test_a_reader_reads_and_writes_nothing(pg_url: str, tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    rita = mint(pg_url, "rita", "reader")
    with team_server(pg_url, tmp_path) as srv, httpx.Client(base_url=srv.base,
                                                          timeout=60) as http:
        for tool, args in (("recall_memories", {"query": "x"}),
                           ("manage_memory", {"action": "list"}),
                           ("get_relevant_context", {"query": "x"}),
                           ("get_iteration_history", {}), ("get_skills", {}),
                           ("get_context_stats", {})):
            assert call(http, rita, tool, args).status_code == 200, tool
        for tool, args in (("save_memory", {"content": "x is y", "category": "fact"}),
                           ("manage_memory", {"action": "forget_all", "confirm": True}),
                           ("store_context", {"content": "x", "context_type": "task"}),
                           ("store_iteration_result", {"iteration": 1, "summary": "s",
                                                       "success": True}),
                           ("mark_useful", {"item_id": "c1", "helpful": True}),
                           ("summarize_old_context", {}),
                           ("prune_low_value_context", {})):
            r = call(http, rita, tool, args)
            assert r.status_code in (400, 403) and "role" in r.text, (tool, r.text)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM context_rows").fetchone() == (0,)

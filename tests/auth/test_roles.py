"""Roles on every route: the one table (sediment.auth.roles), checked by every MCP tool,
every HTTP API endpoint and the review page, against a real server and real tokens."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from sediment.auth.roles import (
    BY_ARGUMENT,
    GRANTS,
    ROLES,
    ROUTES,
    TOOLS,
    Permission,
    allowed,
    tool_permission,
)
from sediment.errors import PermissionDeniedError
from sediment.server import build_server
from sediment.server.tools import LEGACY_TOOL_NAMES
from tests.conftest import Runner, files_workspace
from tests.mcp.conftest import HttpServer, make_store, start_http, stop

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 90
WRITING = sorted(n for n, p in TOOLS.items() if p is not Permission.READ)
WRITING_CALLS: list[tuple[str, dict[str, Any]]] = [
    *((n, {}) for n in WRITING),
    *(("manage_memory", {"action": a}) for a in ("delete", "update", "forget_all")),
]


WHAT: dict[Permission, str] = {
    Permission.READ: "search the layers and knowledge, recall and list memories, read "
                     "context, resources, the tool list and the review page",
    Permission.WRITE: "write the local and delta layers, propose chunks, save, update and "
                      "forget own memories, store context and iteration results, mark "
                      "usefulness, summarize and prune context",
    Permission.REVIEW: "accept, reject and promote proposals; write, update and forget "
                       "global memories",
    Permission.ADMIN: "create, list and revoke tokens",
}


def markdown_table() -> str:
    """The role table docs/roles.md must hold, built from the rules themselves."""
    perms = list(Permission)
    lines = ["| role | " + " | ".join(p.value for p in perms) + " |",
             "|---|" + "---|" * len(perms)]
    for role in ROLES:
        marks = " | ".join("yes" if allowed(role, p) else "no" for p in perms)
        lines.append(f"| {role} | {marks} |")
    lines += ["", "| permission | lets a token |", "|---|---|"]
    lines += [f"| {p.value} | {WHAT[p]} |" for p in perms]
    lines += ["", "| MCP tool (or `POST /tools/{name}`) | permission |", "|---|---|"]
    for name, perm in TOOLS.items():
        extra = ""
        if name in BY_ARGUMENT:
            key, values = BY_ARGUMENT[name]
            extra = "; " + ", ".join(f"`{key}: {v}`: {p.value}" for v, p in values.items())
        lines.append(f"| `{name}` | {perm.value}{extra} |")
    lines += ["", "| HTTP route | permission |", "|---|---|"]
    lines += [f"| `{route}` | {perm.value} |" for route, perm in ROUTES.items()]
    return "\n".join(lines) + "\n"


def test_the_docs_hold_the_table() -> None:
    assert markdown_table() in (ROOT / "docs" / "roles.md").read_text(encoding="utf-8")


def test_roles_grow_by_inclusion_and_unknown_roles_hold_nothing() -> None:
    for smaller, larger in itertools.pairwise(ROLES):
        assert GRANTS[smaller] < GRANTS[larger]
    assert not any(allowed("root", p) for p in Permission)
    assert tool_permission("a_tool_nobody_listed") is Permission.ADMIN
    assert tool_permission("manage_memory", {"action": "list"}) is Permission.READ
    assert tool_permission("manage_memory", {"action": "delete"}) is Permission.WRITE
    assert set(BY_ARGUMENT) <= set(TOOLS)


def test_every_tool_the_server_has_is_in_the_table(tmp_path: Path) -> None:
    server = build_server(files_workspace(make_store(tmp_path / "s")))

    async def main() -> set[str]:
        return {t.name for t in await server.list_tools()}

    assert anyio.run(main) == set(TOOLS) - set(LEGACY_TOOL_NAMES)


@pytest.fixture
def tokens(sediment: Runner) -> dict[str, str]:
    out = {}
    for actor, role in (("rita", "reader"), ("walt", "writer"), ("vera", "reviewer")):
        r = sediment("token", "create", "--actor", actor, "--role", role, "--json")
        assert r.code == 0, r.err
        out[role] = r.json()["token"]
    return out


@pytest.fixture
def server(tmp_path: Path, tokens: dict[str, str]) -> Iterator[HttpServer]:
    srv = start_http(make_store(tmp_path / "store"), token=None)
    yield srv
    stop(srv.process)


def snapshot(*roots: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for root in roots for p in sorted(root.rglob("*.db"))}


async def _calls(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]
                 ) -> list[tuple[bool, str, Any]]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    out = []
    with anyio.fail_after(TIMEOUT):
        async with http, Client(streamable_http_client(url, http_client=http)) as c:
            for name, args in calls:
                r = await c.call_tool(name, args)
                text = "\n".join(getattr(x, "text", "") for x in r.content)
                out.append((bool(r.is_error), text, r.structured_content))
    return out


def mcp_calls(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]
              ) -> list[tuple[bool, str, Any]]:
    return anyio.run(_calls, url, token, calls)


def test_a_reader_is_refused_every_writing_tool_and_writes_nothing(
        server: HttpServer, tokens: dict[str, str], tmp_path: Path) -> None:
    roots = (tmp_path / "store", Path(os.environ["SEDIMENT_DATA_DIR"]))
    before = snapshot(*roots)
    refused = "needs the write permission (role writer or above); the token of actor " \
              "'rita' has the reader role"
    for (name, _args), (error, text, _) in zip(
            WRITING_CALLS, mcp_calls(server.url, tokens["reader"], WRITING_CALLS),
            strict=True):
        shown = LEGACY_TOOL_NAMES.get(name, name)  # a dotted name calls its underscore tool
        assert error and f"tool {shown} {refused}" in text, (name, text)
    base = server.url.removesuffix("/mcp")
    with httpx.Client(base_url=base, timeout=30,
                      headers={"Authorization": f"Bearer {tokens['reader']}"}) as api:
        for name, args in WRITING_CALLS:
            r = api.post(f"/tools/{name}", json=args)
            assert r.status_code == 403, (name, r.text)
            assert r.json()["error"]["code"] == "forbidden"
            assert refused in r.json()["error"]["message"]
        assert api.post("/tools/recall_memories", json={"query": "x"}).status_code == 200
        assert api.get("/tools/list").status_code == 200
    assert snapshot(*roots) == before
    reads = [("agents_search", {"query": "deploy"}), ("recall_memories", {"query": "x"}),
             ("manage_memory", {"action": "list"}), ("get_context_stats", {})]
    for (name, _), (error, text, _) in zip(
            reads, mcp_calls(server.url, tokens["reader"], reads), strict=True):
        assert not error, (name, text)


def test_the_api_acts_as_the_tokens_actor(server: HttpServer, tokens: dict[str, str]) -> None:
    """``POST /tools/{name}`` binds the token's actor like MCP does (it used to fall back
    to the server's own actor, a writer, whatever the token)."""
    base = server.url.removesuffix("/mcp")
    with httpx.Client(base_url=base, timeout=30,
                      headers={"Authorization": f"Bearer {tokens['writer']}"}) as api:
        r = api.post("/tools/save_memory", json={"content": "Walt deploys on Mondays",
                                                 "category": "fact"})
        assert r.status_code == 200, r.text
    (_, _, out), = mcp_calls(server.url, tokens["writer"],
                             [("recall_memories", {"query": "deploys"})])
    assert [m["content"] for m in out["memories"]] == ["Walt deploys on Mondays"]
    (_, _, other), = mcp_calls(server.url, tokens["reviewer"],
                               [("recall_memories", {"query": "deploys"})])
    assert other["memories"] == []


def test_global_memories_are_the_reviewers(server: HttpServer,
                                           tokens: dict[str, str]) -> None:
    save = [("save_memory", {"content": "Releases are signed with the team key",
                             "category": "convention", "scope": "global"})]
    (error, text, out), = mcp_calls(server.url, tokens["writer"], save)
    assert not error and out["status"] == "proposed", text
    (error, text, out), = mcp_calls(server.url, tokens["reviewer"], [
        ("save_memory", {"content": "Every release note names its reviewer",
                         "category": "convention", "scope": "global"})])
    assert not error and out["status"] == "created", text
    (error, text, _), = mcp_calls(server.url, tokens["writer"], [
        ("manage_memory", {"action": "delete", "memory_id": out["id"]})])
    assert error and "global memories are governed by humans" in text
    (error, text, _), = mcp_calls(server.url, tokens["reviewer"], [
        ("manage_memory", {"action": "delete", "memory_id": out["id"]})])
    assert not error, text


def _csrf(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, html
    return m.group(1)


@contextmanager
def _signed_in(base: str, token: str, name: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base, timeout=30) as c:
        nonce = _csrf(c.get("/ui/login").text)
        r = c.post("/ui/login", data={"csrf": nonce, "token": token, "reviewer": name},
                   headers={"Origin": base})
        assert r.status_code == 303, r.text
        yield c


def test_only_a_reviewer_decides_on_the_review_page(server: HttpServer,
                                                   tokens: dict[str, str]) -> None:
    (_, _, wrote), = mcp_calls(server.url, tokens["writer"], [
        ("agents_context_write", {"content": "Deploys freeze on Fridays", "kind": "note",
                                  "confidence": 0.8, "scope": "delta"})])
    (_, text, proposed), = mcp_calls(server.url, tokens["writer"], [
        ("agents_context_propose", {"context_id": wrote["id"]})])
    assert proposed is not None and proposed["proposal_id"], text
    base = server.url.removesuffix("/mcp")
    for token, expected in ((tokens["reader"], 403), (tokens["writer"], 403),
                            (tokens["reviewer"], 303)):
        with _signed_in(base, token, "someone") as c:
            csrf = _csrf(c.get("/ui/queue").text)
            r = c.post("/ui/decide", data={"csrf": csrf, "action": "accept", "confirm": "yes",
                                           "proposal": str(proposed["proposal_id"])},
                       headers={"Origin": base})
            assert r.status_code == expected, r.text
            if expected == 403:
                assert "This needs the reviewer role" in r.text
    with httpx.Client(base_url=base, timeout=30) as c:
        assert c.post("/ui/login", data={"csrf": "x", "token": "sdm_00000000_" + "y" * 43,
                                         "reviewer": "z"}).status_code in (401, 403)
    with pytest.raises(PermissionDeniedError):
        from sediment.auth import Principal
        Principal("walt", "writer").require(ROUTES["POST /ui/decide"], "deciding")

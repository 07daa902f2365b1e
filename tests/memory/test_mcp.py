"""The memory tools and prompt through the official MCP SDK client, in memory."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from sediment.embed import HashEmbedder
from sediment.format import LayerFile
from sediment.memory import FileMemoryStore, MemoryService
from sediment.pg.database import Database
from sediment.server import build_server
from sediment.store import LayerSet
from sediment.workspace import Workspace
from tests import zygote
from tests.conftest import Runner, env_places, files_workspace
from tests.mcp.conftest import SEDIMENT, make_store
from tests.memory.conftest import BACKENDS
from tests.pg.team import seed_project

TIMEOUT = 60


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def server_for(store: Path, actor: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The server over ``store``'s layers whose own actor (a caller without a token) is
    ``actor``."""
    return build_server(files_workspace(store, actor))


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*.db"))}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return make_store(tmp_path / "store")


def test_tools_prompt_and_annotations(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = server_for(store, "alice", monkeypatch)

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert {"save_memory", "recall_memories", "manage_memory"} <= set(tools)
                assert tools["recall_memories"].annotations.read_only_hint is True
                assert tools["manage_memory"].annotations.destructive_hint is True
                assert tools["save_memory"].annotations.read_only_hint is False
                schema = tools["save_memory"].input_schema
                assert schema["additionalProperties"] is False
                assert schema["properties"]["category"]["enum"] == [
                    "preference", "pattern", "correction", "fact", "instruction",
                    "convention"]
                prompts = {p.name for p in (await client.list_prompts()).prompts}
                assert "memory_guidelines" in prompts
                got = await client.get_prompt("memory_guidelines")
                text = got.messages[0].content.text
                for needle in ("recall_memories", "save_memory", "One fact per memory",
                               "Present tense", "Never save", "convention"):
                    assert needle in text

    anyio.run(main)


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("save_memory", {"content": "x", "category": "mood"}, "category"),
    ("save_memory", {"content": "", "category": "fact"}, "content"),
    ("save_memory", {"content": "   ", "category": "fact"}, "content"),
    ("save_memory", {"content": "x", "category": "fact", "colour": "red"}, "colour"),
    ("save_memory", {"content": "x", "category": "fact", "scope": "galaxy"}, "scope"),
    ("save_memory", {"content": "x", "category": "fact", "source": "guess"}, "source"),
    ("save_memory", {"content": "x", "category": "fact", "related_to": ["no such:thing!"]},
     "related_to"),
    ("save_memory", {"content": "my key AKIAIOSFODNN7EXAMPLE", "category": "fact"},
     "AWS key"),
    ("save_memory", {"content": "password = hunter2hunter2", "category": "fact"},
     "password"),
    ("recall_memories", {"query": "x", "limit": 0}, "limit"),
    ("recall_memories", {"query": "x", "limit": 51}, "limit"),
    ("recall_memories", {"query": "x", "limit": "5"}, "limit"),
    ("recall_memories", {"query": ""}, "query"),
    ("recall_memories", {"query": "x", "category": "mood"}, "category"),
    ("manage_memory", {"action": "explode"}, "action"),
    ("manage_memory", {"action": "delete"}, "memory_id"),
    ("manage_memory", {"action": "delete", "memory_id": "42"}, "memory_id"),
    ("manage_memory", {"action": "update", "memory_id": "u1",
                       "updates": {"colour": "red"}}, "colour"),
    ("manage_memory", {"action": "forget_all"}, "confirm"),
]


def test_bad_input_is_an_error_naming_the_field_and_writes_nothing(
        store: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    server = server_for(store, "alice", monkeypatch)
    data = Path(os.environ["SEDIMENT_DATA_DIR"])

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                r = await client.call_tool("save_memory", {"content": "Uses uv for envs",
                                                           "category": "preference"})
                assert not r.is_error, text_of(r)
                before = files_of(store) | files_of(data)
                assert any("actors/alice" in p for p in before)
                for tool, args, needle in BAD:
                    r = await client.call_tool(tool, args)
                    assert r.is_error, (tool, args)
                    assert needle.lower() in text_of(r).lower(), (tool, args, text_of(r))
                assert files_of(store) | files_of(data) == before

    anyio.run(main)


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_actors_memory_is_not_found(store: Path, monkeypatch: pytest.MonkeyPatch,
                                            backend: str,
                                            request: pytest.FixtureRequest) -> None:
    def server(actor: str) -> Any:
        if backend != "postgres":
            return server_for(store, actor, monkeypatch)
        team = Workspace.over_database(Database(request.getfixturevalue("pg_url")),
                                       HashEmbedder(), env_places(actor))
        request.addfinalizer(team.close)
        return build_server(team)

    alice, bob = server("alice"), server("bob")

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(alice) as a, Client(bob) as b:
                r = await a.call_tool("save_memory", {
                    "content": "The release branch is cut on Mondays", "category": "fact",
                    "scope": "project"})
                mid = r.structured_content["id"]
                for action, extra in (("delete", {}), ("update", {"updates": {
                        "content": "changed"}})):
                    r = await b.call_tool("manage_memory", {"action": action,
                                                            "memory_id": mid, **extra})
                    assert r.is_error and "no such memory" in text_of(r)
                r = await b.call_tool("recall_memories", {"query": "release branch"})
                assert r.structured_content["memories"] == []
                r = await a.call_tool("recall_memories", {"query": "release branch"})
                assert [m["id"] for m in r.structured_content["memories"]] == [mid]

    anyio.run(main)


@pytest.mark.parametrize("backend", BACKENDS)
def test_stdio_acts_as_sediment_actor_and_flushes_uses_on_exit(
        store: Path, monkeypatch: pytest.MonkeyPatch, backend: str, tmp_path: Path,
        request: pytest.FixtureRequest, sediment: Runner) -> None:
    monkeypatch.setenv("SEDIMENT_ACTOR", "dana")
    where = ["--dir", str(store)]
    if backend == "postgres":
        url: str = request.getfixturevalue("pg_url")
        seed_project(url, tmp_path)
        where = ["--store", url]
    params = StdioServerParameters(command=zygote.script(SEDIMENT), args=[
        "serve", *where, "--embedder", "hash"], env=dict(os.environ))

    async def main() -> str:
        with anyio.fail_after(TIMEOUT):
            async with Client(params) as client:
                r = await client.call_tool("save_memory", {
                    "content": "Dana pairs on Thursdays", "category": "pattern"})
                assert not r.is_error, text_of(r)
                r = await client.call_tool("recall_memories", {"query": "Dana pairs"})
                (m,) = r.structured_content["memories"]
                assert (m["actor"], m["use_count"]) == ("dana", 1)
                return str(m["id"])

    mid = anyio.run(main)
    shown = sediment("memory", "show", mid, *where, "--json")
    assert shown.code == 0, shown.err
    assert shown.json()["memory"]["use_count"] == 1
    if backend == "postgres":
        return
    emb = HashEmbedder()
    memory = MemoryService(FileMemoryStore(
        LayerSet.from_directory(store), Path(os.environ["SEDIMENT_DATA_DIR"]),
        profile=emb.profile.to_dict(), dim=emb.profile.dim), emb)
    assert memory.show("dana", mid)["memory"]["use_count"] == 1


def test_a_superseded_proposal_leaves_the_review_queue(
        store: Path, monkeypatch: pytest.MonkeyPatch, sediment: Runner) -> None:
    server = server_for(store, "alice", monkeypatch)

    async def main() -> tuple[str, str]:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                args = {"content": "Releases are cut on Mondays", "category": "convention",
                        "scope": "global"}
                first = (await client.call_tool("save_memory", args)).structured_content
                again = (await client.call_tool("save_memory", args)).structured_content
                assert (first["status"], again["status"]) == ("proposed", "proposed")
                assert again["superseded_id"] == first["id"]
                assert (first["id"], again["id"]) == ("p1", "p2")
                return int(first["chunk_id"]), int(again["chunk_id"])

    old, new = anyio.run(main)
    r = sediment("proposals", "list", "--json", "--dir", str(store))
    assert r.code == 0, r.err
    status = {p["context_id"]: p["status"] for p in json.loads(r.out)}
    assert status == {old: "superseded", new: "pending"}
    r = sediment("proposals", "list", "--status", "pending", "--json", "--dir", str(store))
    assert [p["context_id"] for p in json.loads(r.out)] == [new]
    pid = next(p["proposal_id"] for p in json.loads(
        sediment("proposals", "list", "--json", "--dir", str(store)).out)
        if p["context_id"] == old)
    r = sediment("proposals", "accept", str(pid), "--dir", str(store))
    assert r.code == 1 and "superseded" in r.err, (r.out, r.err)
    assert not (store / "AGENTS.user.db").exists() or old not in {
        c.id for c in LayerFile.open(store / "AGENTS.user.db").chunks()}

    async def withdraw() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server_for(store, "alice", monkeypatch)) as client:
                r = await client.call_tool("manage_memory", {"action": "delete",
                                                             "memory_id": f"p{new}"})
                assert not r.is_error, text_of(r)

    anyio.run(withdraw)
    r = sediment("proposals", "list", "--json", "--dir", str(store))
    assert {p["context_id"]: p["status"] for p in json.loads(r.out)} == {
        old: "superseded", new: "withdrawn"}
    for want, cid in (("superseded", old), ("withdrawn", new)):
        r = sediment("proposals", "list", "--status", want, "--json", "--dir", str(store))
        assert r.code == 0, r.err
        assert [p["context_id"] for p in json.loads(r.out)] == [cid]

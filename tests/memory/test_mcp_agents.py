"""What an agent meets over MCP (official SDK client, in memory): forget_all's scope, the
recall floor, short memory handles and a description on every field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp import Client
from sediment.server import build_server
from tests.conftest import files_workspace
from tests.mcp.conftest import make_store

TIMEOUT = 60


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def server_for(store: Path, actor: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    return build_server(files_workspace(store, actor))


async def _call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    r = await client.call_tool(tool, args)
    assert not r.is_error, text_of(r)
    out: dict[str, Any] = r.structured_content
    return out


def test_forget_all_from_a_second_project_keeps_user_memories_unless_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = make_store(tmp_path / "first")
    second = make_store(tmp_path / "second")

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server_for(first, "alice", monkeypatch)) as a:
                await _call(a, "save_memory", {"content": "The user writes tests first",
                                               "category": "preference"})
            async with Client(server_for(second, "alice", monkeypatch)) as b:
                tools = {t.name: t for t in (await b.list_tools()).tools}
                manage = tools["manage_memory"]
                assert "this project" in (manage.description or "")
                assert manage.input_schema["properties"]["scope"]["enum"] == [
                    "user", "project"]
                await _call(b, "save_memory", {"content": "The second project uses Go",
                                               "category": "fact", "scope": "project"})
                out = await _call(b, "manage_memory", {"action": "forget_all",
                                                       "confirm": True})
                assert out["forgotten"] == 1
                got = await _call(b, "manage_memory", {"action": "list"})
                assert [m["content"] for m in got["memories"]] == [
                    "The user writes tests first"]
                out = await _call(b, "manage_memory", {"action": "forget_all",
                                                       "confirm": True, "scope": "user"})
                assert out["forgotten"] == 1
            async with Client(server_for(first, "alice", monkeypatch)) as a:
                got = await _call(a, "manage_memory", {"action": "list"})
                assert got["memories"] == []

    anyio.run(main)


MEMORY_TOOLS = ("save_memory", "recall_memories", "manage_memory")


def _undescribed(schema: dict[str, Any], where: str, defs: dict[str, Any]) -> list[str]:
    out = []
    for name, prop in (schema.get("properties") or {}).items():
        if not prop.get("description"):
            out.append(f"{where}.{name}")
        for sub in (prop, *prop.get("anyOf", []), prop.get("items") or {}):
            if "$ref" in sub:
                out += _undescribed(defs[sub["$ref"].split("/")[-1]], f"{where}.{name}", defs)
    return out


def test_every_field_of_every_memory_tool_is_described(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = server_for(make_store(tmp_path / "store"), "alice", monkeypatch)

    async def main() -> list[str]:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
        missing = []
        for name in MEMORY_TOOLS:
            for kind, schema in (("input", tools[name].input_schema),
                                 ("output", tools[name].output_schema or {})):
                assert schema.get("properties"), (name, kind)
                missing += _undescribed(schema, f"{name} {kind}", schema.get("$defs", {}))
        return missing

    assert anyio.run(main) == []


def test_recall_over_mcp_says_when_nothing_is_relevant_and_takes_handles(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = server_for(make_store(tmp_path / "store"), "alice", monkeypatch)

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                for text in ("The frontend uses React", "Deploys freeze on Fridays"):
                    await _call(client, "save_memory", {"content": text, "category": "fact"})
                r = await client.call_tool("recall_memories", {"query": "zzqx"})
                assert not r.is_error and r.structured_content["memories"] == []
                assert "relevant" in text_of(r)
                got = await _call(client, "recall_memories", {"query": "zzqx",
                                                              "min_score": 0.0})
                assert got["memories"] and got["min_score"] == 0.0
                got = await _call(client, "recall_memories", {"query": "frontend React"})
                assert [m["id"] for m in got["memories"]] == ["u1"]
                assert got["memories"][0]["score"] < 0.9
                out = await _call(client, "manage_memory", {
                    "action": "update", "memory_id": "u1",
                    "updates": {"content": "The frontend uses Svelte"}})
                assert (out["status"], out["id"]) == ("updated", "u3")
                out = await _call(client, "manage_memory", {"action": "delete",
                                                            "memory_id": "u2"})
                assert out["status"] == "deleted"
                r = await client.call_tool("recall_memories", {"query": "x", "min_score": 2})
                assert r.is_error and "min_score" in text_of(r)

    anyio.run(main)

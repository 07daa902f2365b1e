"""What an agent meets over MCP (official SDK client, in memory): forget_all's scope, the
recall floor, short memory handles and a description on every field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp import Client
from sediment.embed import HashEmbedder
from sediment.ops.service import ContextService
from sediment.server import build_server
from sediment.store import LayerSet
from tests.mcp.conftest import make_store

TIMEOUT = 60


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def server_for(store: Path, actor: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("SEDIMENT_ACTOR", actor)
    return build_server(ContextService(LayerSet.from_directory(store), HashEmbedder()))


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

"""Personas as MCP prompts through the SDK client: in memory, over stdio with --agent, and
over streamable HTTP from the real ``sediment serve``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from mcp import Client
from sediment.config import load_config
from sediment.embed import HashEmbedder
from sediment.ops.requests import WriteRequest
from sediment.ops.service import ContextService
from sediment.server import build_server
from sediment.server.prompts import SYSTEM_HEADER, serve_personas
from sediment.store import LayerSet
from tests import zygote
from tests.agents.project import SEDIMENT, env, write_project
from tests.conftest import files_workspace
from tests.mcp.conftest import TOKEN, start_http, stop

TIMEOUT = 60


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "acme")


async def _check_prompts(client: Client) -> None:
    listed = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(listed) - {"memory_guidelines"} == {"code-reviewer", "onboarding",
                                                   "incident-responder"}
    incident = listed["incident-responder"]
    assert incident.description == "Helps triage a production incident with the relevant " \
                                   "runbooks"
    assert [(a.name, a.required) for a in incident.arguments or []] == [
        ("service", True), ("severity", False)]
    got = await client.get_prompt("incident-responder",
                                  {"service": "payments-api", "severity": "P1"})
    assert got.description == incident.description
    first, second = got.messages
    assert first.role == "user" and second.role == "assistant"
    assert first.content.text.startswith(  # type: ignore[union-attr]
        SYSTEM_HEADER + "You are the incident responder for payments-api (P1)")
    assert "restart the payments worker" in first.content.text  # type: ignore[union-attr]
    assert second.content.text.startswith("I have loaded 2 runbook")  # type: ignore[union-attr]
    with pytest.raises(MCPError, match="persona incident-responder: argument service is "
                                       "required"):
        await client.get_prompt("incident-responder", {})
    with pytest.raises(MCPError, match="unknown argument 'colour'"):
        await client.get_prompt("onboarding", {"colour": "red"})
    with pytest.raises(MCPError) as unknown:
        await client.get_prompt("nobody", {"service": "x"})
    assert unknown.value.error.code == INVALID_PARAMS
    assert unknown.value.error.message == (
        "unknown prompt 'nobody'; the prompts are: code-reviewer, incident-responder, "
        "memory_guidelines, onboarding")


def test_prompts_in_memory(project: Path) -> None:
    ws = files_workspace(project, root=project)
    server = build_server(ws)
    serve_personas(server, ws, load_config(project, env={}).agents.values())

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                await _check_prompts(client)

    anyio.run(main)


def test_prompts_over_streamable_http(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEDIMENT_CONFIG", str(project / "sediment.toml"))
    server = start_http(project)
    try:
        async def main() -> None:
            with anyio.fail_after(TIMEOUT):
                http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
                async with http, Client(streamable_http_client(server.url,
                                                               http_client=http)) as client:
                    await _check_prompts(client)

        anyio.run(main)
        assert server.process.poll() is None
    finally:
        stop(server.process)


def test_serve_agent_exposes_only_its_tools(project: Path) -> None:
    params = StdioServerParameters(command=zygote.script(SEDIMENT),
                                   args=["serve", "--agent", "onboarding", "--no-warm-up"],
                                   env=env(), cwd=str(project))

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(params) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                assert names == ["agents_search", "search_knowledge"]
                hits = await client.call_tool("agents_search", {"query": "setup", "k": 1})
                assert not hits.is_error
                denied = await client.call_tool("agents_context_write", {
                    "content": "x", "kind": "note", "confidence": 0.5})
                assert denied.is_error
                assert len((await client.list_prompts()).prompts) == 4  # and memory_guidelines

    anyio.run(main)


def test_serve_agent_names_an_unknown_persona(project: Path) -> None:
    p = subprocess.run([zygote.script(SEDIMENT),
                        "serve", "--agent", "ghost"], cwd=project, env=env(),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 1
    assert p.stderr.startswith("Error: no persona 'ghost' (personas: code-reviewer, "), p.stderr


def test_serve_passes_an_unserved_tool_through_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "sediment.toml").write_text(
        '[agents.r]\nsystem_prompt = "x"\ntools = ["search", "create_jira_ticket"]\n')
    p = subprocess.run([zygote.script(SEDIMENT), "serve", "--no-warm-up"], cwd=tmp_path, env=env(),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert ("sediment: warning: persona r: Sediment does not serve 'create_jira_ticket'; "
            "passed to the client as written (its own tools)\n") in p.stderr


BROKEN = (
    '[agents.ok]\nsystem_prompt = "Be helpful."\n\n'
    '[agents.r]\nsystem_prompt = "x"\ntools = ["search", "jira ticket!"]\n\n'
    '[agents.script.bad]\npath = "bad.lua"\n\n'
    '[agents.memory_guidelines]\nsystem_prompt = "shadows the built-in prompt"\n')


def test_serve_skips_a_broken_persona_and_serves_the_rest(tmp_path: Path) -> None:
    (tmp_path / "sediment.toml").write_text(BROKEN)
    (tmp_path / "bad.lua").write_text("return { resolve = function( }\n")
    p = subprocess.run([zygote.script(SEDIMENT), "serve", "--no-warm-up"], cwd=tmp_path, env=env(),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    toml = tmp_path / "sediment.toml"
    assert (f"sediment: warning: persona r skipped: {toml}: persona r: tool name "
            "'jira ticket!' must be") in p.stderr
    assert "sediment: warning: persona bad skipped: persona bad: bad.lua:1:" in p.stderr
    assert ("sediment: warning: persona memory_guidelines skipped: persona memory_guidelines: "
            "the server already has a prompt of that name") in p.stderr
    params = StdioServerParameters(command=zygote.script(SEDIMENT), args=["serve", "--no-warm-up"],
                                   env=env(), cwd=str(tmp_path))

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(params) as client:
                prompts = {p.name for p in (await client.list_prompts()).prompts}
                assert prompts == {"ok", "memory_guidelines"}
                got = await client.get_prompt("ok", {})
                assert "Be helpful." in str(got.messages[0].content)
                guide = await client.get_prompt("memory_guidelines", {})
                assert "shadows" not in str(guide.messages[0].content)
                tools = {t.name for t in (await client.list_tools()).tools}
                assert {"agents_search", "save_memory", "store_context"} <= tools
                with pytest.raises(MCPError, match="unknown prompt 'r'"):
                    await client.get_prompt("r", {})

    anyio.run(main)


def test_serve_agent_names_why_its_persona_is_broken(tmp_path: Path) -> None:
    (tmp_path / "sediment.toml").write_text(BROKEN)
    p = subprocess.run([zygote.script(SEDIMENT), "serve", "--agent", "r"], cwd=tmp_path, env=env(),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 1
    assert (f"\nError: persona r failed to load: {tmp_path / 'sediment.toml'}: persona r: "
            "tool name 'jira ticket!' must be") in p.stderr, p.stderr


def test_agent_list_shows_broken_personas(tmp_path: Path) -> None:
    (tmp_path / "sediment.toml").write_text(BROKEN)
    (tmp_path / "bad.lua").write_text("return { resolve = function( }\n")
    p = subprocess.run([zygote.script(SEDIMENT), "agent", "list"], cwd=tmp_path, env=env(),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("ok ")
    assert any(line.startswith("r ") and "persona r: tool name" in line
               and line.endswith("[toml]") for line in lines), lines
    assert any(line.startswith("bad ") and "BROKEN: persona bad: bad.lua:1:" in line
               and line.endswith("[lua]") for line in lines), lines
    j = subprocess.run([zygote.script(SEDIMENT),
                        "agent", "list", "--json"], cwd=tmp_path, env=env(),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    got = json.loads(j.stdout)
    assert [a["name"] for a in got["agents"]] == ["ok"]
    assert {b["name"]: b["source"] for b in got["broken"]} == {
        "r": "toml", "bad": "lua", "memory_guidelines": "toml"}
    assert all(b["origin"] == str(tmp_path / "sediment.toml") for b in got["broken"])


LISTER = '''agent = {}
agent.name = "lister"
agent.description = "Lists what a search for the topic finds"
agent.tools = { "agents_search" }
agent.arguments = { { name = "topic", required = true } }
function agent.resolve(args, config, context)
    local found = ""
    for _, hit in ipairs(context.search({ query = args.topic, limit = 10 })) do
        local doc = context.get(hit.id)
        found = found .. "\\n" .. hit.content .. " | " .. tostring(doc ~= nil)
    end
    return { system = "found:" .. found }
end
'''


def test_a_persona_reads_as_the_actor_it_is_rendered_for(tmp_path: Path) -> None:
    """Another actor's local note stays out of a persona's search, as out of their own."""
    root = write_project(tmp_path / "acme")
    (root / "agents" / "lister.lua").write_text(LISTER)
    with (root / "sediment.toml").open("a") as f:
        f.write('\n[agents.script.lister]\npath = "agents/lister.lua"\n')
    service = ContextService(LayerSet.from_directory(root), HashEmbedder(), root=root)
    service.write(WriteRequest(content="Alice's private plan: rotate the payments keys.",
                               kind="note", confidence=0.9), actor="alice")

    def server_of(actor: str) -> Any:
        ws = files_workspace(root, actor, root=root)  # the server's own actor, no token
        server = build_server(ws)
        serve_personas(server, ws, load_config(root, env={}).agents.values())
        return server

    async def render(server: Any) -> str:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                got = await client.get_prompt("lister", {"topic": "payments keys plan"})
        return got.messages[0].content.text  # type: ignore[union-attr]

    assert "Alice's private plan" in anyio.run(render, server_of("alice"))
    bob = anyio.run(render, server_of("bob"))
    assert bob.startswith(SYSTEM_HEADER + "found:") and "Alice's private plan" not in bob

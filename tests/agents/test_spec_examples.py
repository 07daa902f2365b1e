"""The personas specification's own examples, copied unchanged into a project, through the
real ``sediment`` command, the official MCP SDK client and the HTTP API.

Every TOML, Lua and JSON block of ``../shared/seeds/agent-personas-spec.md`` is used: the
TOML and Lua ones are written into a project as a user would copy them, and the JSON ones
are the shapes (and, where the example's data is ours, the values) the responses must have.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from sediment.server.prompts import SYSTEM_HEADER
from tests import zygote
from tests.conftest import SEDIMENT, Runner, shared
from tests.mcp.conftest import TOKEN, HttpServer, start_http, stop

SPEC = shared("seeds", "agent-personas-spec.md")
TIMEOUT = 60

RUNBOOKS = {
    "runbooks/payments-api.md": "# Payments API runbook\n\nWhen payments-api returns 502 "
                                "during an incident, restart the payments worker.\n",
    "runbooks/database.md": "# Database runbook\n\nDuring an incident with payments-api "
                            "latency, check the connection pool.\n",
    "runbooks/queue.md": "# Queue runbook\n\nIf an incident backs up the payments-api queue, "
                         "drain it.\n",
    # Matches the query too, but is not a runbook: filters.source must leave it out.
    "docs/history.md": "# Incident history\n\nThe payments-api incident runbook was "
                       "rewritten in May.\n",
}
ARGS = {"service": "payments-api", "severity": "P1"}


def blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", SPEC.read_text(), flags=re.S | re.M)


def toml_block(first_line: str) -> str:
    [block] = [b for b in blocks("toml") if b.startswith(first_line)]
    return block


def json_block(key: str) -> Any:
    """The JSON example whose first key is ``key``."""
    [block] = [b for b in blocks("json") if b.startswith(f'{{\n  "{key}"')]
    return json.loads(block)


def conforms(ours: Any, spec: Any, where: str = "response") -> None:
    """``ours`` has the shape of the specification's example: the same keys, values of
    the same JSON types, every list item shaped like one of the example's items."""
    if isinstance(spec, dict):
        assert isinstance(ours, dict), f"{where}: expected an object, got {ours!r}"
        assert set(ours) == set(spec), f"{where}: keys {sorted(ours)} != {sorted(spec)}"
        for key in spec:
            conforms(ours[key], spec[key], f"{where}.{key}")
    elif isinstance(spec, list):
        assert isinstance(ours, list), f"{where}: expected a list, got {ours!r}"
        for i, item in enumerate(ours):
            errors = []
            for example in spec or [item]:
                try:
                    conforms(item, example, f"{where}[{i}]")
                    break
                except AssertionError as exc:
                    errors.append(str(exc))
            else:
                raise AssertionError("; ".join(errors))
    else:
        assert type(ours) is type(spec), f"{where}: {ours!r} is not like {spec!r}"


def env() -> dict[str, str]:
    return {**os.environ, "SEDIMENT_EMBEDDER": "hash"}


def write_project(root: Path) -> Path:
    """Sections 3.1 and 3.2 as sediment.toml, the Lua script at the path its first line
    names, three runbooks and one other document; compiled with the hash embedder."""
    for rel, text in RUNBOOKS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "sediment.toml").write_text(toml_block("[agents.code-reviewer]") + "\n"
                                        + toml_block("[agents.script.incident-responder]"))
    [script] = blocks("lua")
    rel = script.splitlines()[0].removeprefix("--").strip()
    assert rel == "agents/incident-responder.lua"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(script)
    subprocess.run([zygote.script(str(SEDIMENT)), "compile"], cwd=root, env=env(), check=True,
                   capture_output=True, timeout=120)
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("spec") / "acme"
    home = root.parent / "home"
    with pytest.MonkeyPatch.context() as mp:
        # Module-scoped, so the per-test isolation of tests/conftest.py is not in force yet.
        mp.setenv("SEDIMENT_USER_CONFIG", str(home / "config.toml"))
        mp.setenv("SEDIMENT_CACHE_DIR", str(home / "cache"))
        mp.setenv("SEDIMENT_DATA_DIR", str(home / "data"))
        mp.setenv("SEDIMENT_TOKENS_FILE", str(home / "tokens.json"))
        for var in ("SEDIMENT_ACTOR", "SEDIMENT_DIR", "SEDIMENT_TOKEN", "SEDIMENT_CONFIG"):
            mp.delenv(var, raising=False)
        yield write_project(root)


@pytest.fixture(scope="module")
def server(project: Path) -> Iterator[HttpServer]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SEDIMENT_CONFIG", str(project / "sediment.toml"))
        mp.setenv("SEDIMENT_USER_CONFIG", str(project.parent / "home" / "config.toml"))
        mp.setenv("SEDIMENT_CACHE_DIR", str(project.parent / "home" / "cache"))
        mp.setenv("SEDIMENT_DATA_DIR", str(project.parent / "home" / "data"))
        running = start_http(project, "--no-warm-up")
    yield running
    stop(running.process)


@pytest.fixture
def api(server: HttpServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url.removesuffix("/mcp"), timeout=30,
                      headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def expected_message() -> str:
    """The specification's own assistant message (7.2): it loads three runbooks, and so
    does the project here."""
    [message] = json_block("result")["result"]["messages"]
    return str(message["content"])


def check_system(system: str) -> None:
    spec_start = json_block("result")["result"]["system"].removesuffix("...")
    assert system.startswith(spec_start)
    for rel, text in RUNBOOKS.items():
        body = text.split("\n\n", 1)[1].strip()
        assert (body in system) == rel.startswith("runbooks/"), rel
    for title in ("Payments API runbook", "Database runbook", "Queue runbook"):
        assert f"---\n## {title}\n# {title}\n" in system


def test_the_specification_has_the_examples_this_test_reads() -> None:
    assert len(blocks("toml")) == 3 and len(blocks("lua")) == 1 and len(blocks("json")) == 6


def test_agent_list_lists_the_examples(project: Path, sediment: Runner) -> None:
    r = sediment("agent", "list", "--json", cwd=project)
    assert r.code == 0, r.err
    spec = json_block("agents")
    out = r.json()
    conforms({"agents": out["agents"]}, spec)
    agents = {a["name"]: a for a in out["agents"]}
    assert list(agents) == ["code-reviewer", "architect", "incident-responder"]
    for example in spec["agents"]:
        ours = agents[example["name"]]
        assert (ours["description"], ours["source"], ours["arguments"]) == (
            example["description"], example["source"], example["arguments"])
    assert agents["incident-responder"]["tools"] == ["agents_search", "agents_get",
                                                     "create_jira_ticket"]
    assert agents["architect"]["tools"] == ["agents_search", "agents_get", "agents_sources"]
    warning = ("warning: persona incident-responder: Sediment does not serve "
               "'create_jira_ticket'; passed to the client as written (its own tools)")
    assert out["warnings"] == [warning] and r.err == warning + "\n"
    text = sediment("agent", "list", cwd=project)
    assert text.code == 0 and text.err == warning + "\n"
    assert re.search(r"^incident-responder +Helps triage production incidents with relevant "
                     r"runbooks +\(tools: agents_search, agents_get, create_jira_ticket\) +"
                     r"\[lua\]$", text.out, flags=re.M), text.out


def test_agent_test_resolves_the_incident_responder(project: Path, sediment: Runner) -> None:
    r = sediment("agent", "test", "incident-responder", "--arg", "service=payments-api",
                 "--arg", "severity=P1", "--json", cwd=project)
    assert r.code == 0, r.err
    out = r.json()
    check_system(out["system"])
    assert out["messages"] == [{"role": "assistant", "content": expected_message()}]
    assert (out["searches"], out["gets"]) == (1, 3)
    assert out["tools"] == ["agents_search", "agents_get", "create_jira_ticket"]
    text = sediment("agent", "test", "incident-responder", "--arg", "service=payments-api",
                    "--arg", "severity=P1", cwd=project)
    assert text.code == 0, text.err
    for line in ("Agent: incident-responder", "Source: lua (",
                 "Tools: agents_search, agents_get, create_jira_ticket",
                 f"  [assistant] {expected_message()}", "(1 searches, 3 document fetches)"):
        assert line in text.out
    assert "create_jira_ticket" in text.err


def test_agent_init_prints_the_specifications_config(project: Path, sediment: Runner) -> None:
    r = sediment("agent", "init", "sre-helper", cwd=project)
    assert r.code == 0, r.err
    spec = re.search(r"\$ ctx agent init sre-helper\n(.*?)```", SPEC.read_text(), re.S)
    assert spec is not None
    snippet = textwrap.dedent(spec.group(1).split("Add to config:\n", 1)[1]).strip()
    assert snippet in r.out
    assert (project / "agents" / "sre-helper.lua").is_file()
    (project / "agents" / "sre-helper.lua").unlink()


def test_the_complete_config(tmp_path: Path, sediment: Runner) -> None:
    """Section 14 names Context Harness's own sections (a SQLite path, git connectors, a
    Lua tool): Sediment names each it does not have; its agents work unchanged."""
    complete = toml_block("[db]")
    (tmp_path / "sediment.toml").write_text(complete)
    r = sediment("agent", "list", cwd=tmp_path)
    assert r.code == 1
    assert r.err.strip() == (f"Error: {tmp_path / 'sediment.toml'}: unknown section(s) "
                             "chunking, connectors, db, retrieval, server, tools; known: "
                             "agents, compile, context, embedder, sources, store")
    agents = complete[complete.index("# ── Agents (inline)"):]
    (tmp_path / "sediment.toml").write_text(agents)
    [script] = blocks("lua")
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "incident-responder.lua").write_text(script)
    r = sediment("agent", "list", "--json", cwd=tmp_path)
    assert r.code == 0, r.err
    assert [a["name"] for a in r.json()["agents"]] == ["code-reviewer", "architect",
                                                       "incident-responder"]


def test_http_agents_list_and_prompt(api: httpx.Client) -> None:
    listed = api.get("/agents/list")
    assert listed.status_code == 200, listed.text
    conforms(listed.json(), json_block("agents"))
    request = json_block("arguments")
    assert request == {"arguments": ARGS}
    r = api.post("/agents/incident-responder/prompt", json=request)
    assert r.status_code == 200, r.text
    spec = json_block("result")
    conforms(r.json(), spec)
    result = r.json()["result"]
    check_system(result["system"])
    assert result["messages"] == spec["result"]["messages"]
    assert result["tools"] == ["agents_search", "agents_get", "create_jira_ticket"]
    conforms({"tools": result["tools"]}, json_block("tools"))


@pytest.mark.parametrize(("agent", "tools"), [
    ("code-reviewer", ["agents_search", "agents_get"]),
    ("architect", ["agents_search", "agents_get", "agents_sources"]),
    ("incident-responder", ["agents_search", "agents_get"]),
])
def test_http_tools_list_scoped_to_an_agent(api: httpx.Client, agent: str,
                                            tools: list[str]) -> None:
    r = api.get("/tools/list", params={"agent": agent})
    assert r.status_code == 200, r.text
    assert [t["name"] for t in r.json()["tools"]] == tools


def test_http_get_and_sources(api: httpx.Client) -> None:
    hits = api.post("/tools/agents_search", json={
        "query": "restart the payments worker", "k": 1, "filters": {"source": "runbooks"}})
    assert hits.status_code == 200, hits.text
    [hit] = hits.json()["result"]["results"]
    doc = api.post("/tools/agents_get", json={"id": hit["id"]})
    assert doc.status_code == 200, doc.text
    got = doc.json()["result"]
    assert (got["title"], got["path"]) == ("Payments API runbook", "runbooks/payments-api.md")
    assert got["body"] == RUNBOOKS["runbooks/payments-api.md"].strip()
    sources = api.post("/tools/agents_sources", json={})
    assert sources.status_code == 200, sources.text
    [base] = sources.json()["result"]["layers"]
    assert [d["path"] for d in base["documents"]] == sorted(RUNBOOKS)
    missing = api.post("/tools/agents_get", json={"id": 999_999})
    assert missing.status_code == 404, missing.text
    assert missing.json()["error"]["code"] == "not_found"
    assert "no readable chunk 999999" in missing.json()["error"]["message"]


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", exclude_none=True, by_alias=True)


def test_mcp_prompts(server: HttpServer) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
            async with http, Client(streamable_http_client(server.url,
                                                           http_client=http)) as client:
                listed = [p for p in (await client.list_prompts()).prompts
                          if p.name != "memory_guidelines"]
                conforms({"prompts": [_dump(p) for p in listed]}, json_block("prompts"))
                assert [p.name for p in listed] == ["code-reviewer", "architect",
                                                    "incident-responder"]
                got = await client.get_prompt("incident-responder", ARGS)
                spec = json_block("description")
                conforms({k: v for k, v in _dump(got).items() if k in spec}, spec)
                assert got.description == spec["description"]
                system, greeting = got.messages
                # MCP prompt messages have no system role: see docs/personas.md.
                assert system.role == "user" and greeting.role == "assistant"
                text = system.content.text  # type: ignore[union-attr]
                assert text.startswith(SYSTEM_HEADER)
                check_system(text.removeprefix(SYSTEM_HEADER))
                assert greeting.content.text == expected_message()  # type: ignore[union-attr]
                names = [t.name for t in (await client.list_tools()).tools]
                assert {"agents_search", "agents_get", "agents_sources"} <= set(names)
                hits = await client.call_tool("agents_search", {
                    "query": "incident", "k": 10, "filters": {"source": "runbooks"}})
                assert hits.structured_content is not None
                found = {r["sources"][0].split(":")[0]
                         for r in hits.structured_content["results"]}
                assert found == {p for p in RUNBOOKS if p.startswith("runbooks/")}
                doc = await client.call_tool(
                    "agents_get", {"id": hits.structured_content["results"][0]["id"]})
                assert not doc.is_error and doc.structured_content is not None
                assert doc.structured_content["body"] in {t.strip() for t in RUNBOOKS.values()}

    anyio.run(main)


def test_docs_personas_starts_from_the_specifications_example() -> None:
    from tests.conftest import REPO

    page = (REPO / "docs" / "personas.md").read_text()
    top = page.split("\n## Three ways to define one\n", 1)[0]
    ours = re.findall(r"^```(toml|lua)\n(.*?)^```", top, flags=re.S | re.M)
    spec = [("toml", toml_block("[agents.code-reviewer]")),
            ("toml", toml_block("[agents.script.incident-responder]")), ("lua", blocks("lua")[0])]
    assert ours == spec

"""The other specifications' examples that target Sediment's interfaces, read from
``../shared/seeds/`` and run as written (the personas specification's are in
tests/agents/test_spec_examples.py, KCP's in tests/kcp/test_conformance.py):

- the RFC's JSON-RPC requests (sections 10 and 15) through the official MCP SDK client;
- the memory specification's tool input schemas, and its own example memory;
- the progressive-context specification's tool signatures (parsed with ``ast``), its
  configuration presets and its YAML configuration's values, through ``sediment context
  config``.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from mcp import Client
from sediment.server import build_server
from tests.conftest import Runner, files_workspace, shared
from tests.mcp.conftest import make_store

SEEDS = shared("seeds")
TIMEOUT = 60


def blocks(seed: str, lang: str) -> list[str]:
    """The fenced blocks of ``seed`` whose info string is ``lang`` ("" for unlabelled)."""
    out: list[str] = []
    current: list[str] | None = None
    keep = False
    for line in (SEEDS / seed).read_text().splitlines(keepends=True):
        if current is None and line.startswith("```"):
            current, keep = [], line[3:].strip() == lang
        elif current is not None and line.rstrip() == "```":
            if keep:
                out.append("".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return out


def tool_schemas(store: Path) -> dict[str, dict[str, Any]]:
    async def main() -> dict[str, dict[str, Any]]:
        async with Client(server(store)) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    return anyio.run(main)


def server(store: Path) -> Any:
    return build_server(files_workspace(store, root=store))


def json_types(prop: dict[str, Any]) -> set[str]:
    """The JSON types a property of an input schema admits (a ``$ref`` is an object)."""
    out: set[str] = set()
    for alt in prop.get("anyOf", [prop]):
        if "$ref" in alt:
            out.add("object")
        elif isinstance(alt.get("type"), str):
            out.add(alt["type"])
    return out


# -- the RFC's JSON-RPC requests -------------------------------------------------------

def rfc_requests() -> list[dict[str, Any]]:
    return [json.loads(b) for b in blocks("agents-db-rfc.md", "json") if '"method"' in b]


def test_the_rfc_has_the_requests_this_test_sends() -> None:
    assert [r["method"] for r in rfc_requests()] == [
        "agents_search", "agents_context_write", "agents_context_propose",
        "agents_context_write", "agents_context_write", "agents_context_propose"]


def test_the_rfc_requests_over_mcp(tmp_path: Path) -> None:
    """Section 10's schematic requests with their placeholders filled in (``"local |
    delta"`` as each of them, ``"uint32"`` as the written chunk's id), then section 15's
    flow exactly as written; its ``context_id: 1234`` names no chunk here, so it is sent
    as written (a precise error) and then with the id the flow's write returned."""
    store = make_store(tmp_path / "store")
    search, write, propose, *flow = rfc_requests()
    [scopes] = [write["params"]["scope"].split(" | ")]
    assert scopes == ["local", "delta"]

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server(store)) as client:
                found = await client.call_tool(search["method"], search["params"])
                assert not found.is_error, found.content
                assert found.structured_content is not None
                assert {r["kind"] for r in found.structured_content["results"]} <= {
                    "architecture", "invariant"}
                assert found.structured_content["results"], "make_store has an invariant"
                ids = {}
                for scope in scopes:
                    wrote = await client.call_tool(write["method"],
                                                   {**write["params"], "scope": scope})
                    assert not wrote.is_error, wrote.content
                    assert wrote.structured_content is not None
                    ids[scope] = wrote.structured_content["id"]
                proposed = await client.call_tool(
                    propose["method"], {**propose["params"], "context_id": ids["delta"]})
                assert not proposed.is_error, proposed.content
                local_write, delta_write, flow_propose = flow
                for request in (local_write, delta_write):
                    wrote = await client.call_tool(request["method"], request["params"])
                    assert not wrote.is_error, wrote.content
                    assert wrote.structured_content is not None
                    assert wrote.structured_content["layer"] == request["params"]["scope"]
                written = wrote.structured_content["id"]
                as_written = await client.call_tool(flow_propose["method"],
                                                    flow_propose["params"])
                assert as_written.is_error
                assert "1234" in as_written.content[0].text  # type: ignore[union-attr]
                ok = await client.call_tool(flow_propose["method"],
                                            {**flow_propose["params"], "context_id": written})
                assert not ok.is_error, ok.content
                assert ok.structured_content is not None
                assert ok.structured_content["context_id"] == written

    anyio.run(main)


# -- the memory specification's tools --------------------------------------------------

FIELD = re.compile(r"^  (\w+)\s+\((\w+(?:\[\])?), (required|optional)\)", re.M)
SPEC_TYPES = {"string": {"string"}, "number": {"integer", "number"}, "string[]": {"array"},
              "object": {"object"}}


def memory_tools() -> dict[str, list[tuple[str, str, bool]]]:
    out = {}
    for block in blocks("agent-memory-design.md", ""):
        m = re.match(r"Name:\s+(\w+)", block)
        if m and "InputSchema:" in block:
            out[m.group(1)] = [(f, t, req == "required") for f, t, req in FIELD.findall(block)]
    return out


def test_the_memory_tools_take_the_specifications_inputs(tmp_path: Path) -> None:
    spec = memory_tools()
    assert set(spec) == {"save_memory", "recall_memories", "manage_memory"}
    schemas = tool_schemas(make_store(tmp_path / "store"))
    for tool, fields in spec.items():
        schema = schemas[tool]
        for name, typ, required in fields:
            prop = schema["properties"].get(name)
            assert prop is not None, f"{tool}.{name}"
            assert json_types(prop) & SPEC_TYPES[typ], (tool, name, prop)
            assert (name in schema.get("required", [])) == required, (tool, name)
    recall = schemas["recall_memories"]["properties"]["limit"]
    assert (recall["default"], recall["maximum"]) == (10, 50)  # "(default: 10, max: 50)"
    save = schemas["save_memory"]["properties"]
    assert (save["source"]["default"], save["scope"]["default"]) == ("inferred", "user")


def test_the_specifications_example_memory_is_recalled(tmp_path: Path) -> None:
    """The guidelines' good memory, saved and recalled with the query the recall tool's
    schema gives as its example."""
    text = (SEEDS / "agent-memory-design.md").read_text()
    good = re.search(r'Good: "(User requires all TypeScript functions.*?)"', text, re.S)
    query = re.search(r'E\.g\., "(.*?)"', text)
    assert good is not None and query is not None
    content = " ".join(good.group(1).split())

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server(make_store(tmp_path / "store"))) as client:
                saved = await client.call_tool("save_memory", {
                    "content": content, "category": "preference", "source": "explicit"})
                assert not saved.is_error, saved.content
                got = await client.call_tool("recall_memories", {"query": query.group(1)})
                assert not got.is_error, got.content
                assert got.structured_content is not None
                assert content in json.dumps(got.structured_content)
                guide = await client.get_prompt("memory_guidelines", {})
                words = guide.messages[0].content.text  # type: ignore[union-attr]
                for name in ("recall_memories", "save_memory", "preference", "correction",
                             "convention"):
                    assert name in words

    anyio.run(main)


# -- the progressive-context specification ---------------------------------------------

def context_signatures() -> dict[str, dict[str, tuple[bool, Any]]]:
    """Tool name -> parameter -> (required, default), from the specification's Python."""
    out: dict[str, dict[str, tuple[bool, Any]]] = {}
    for block in blocks("progressive-context-server.md", "python"):
        if "@mcp.tool()" not in block:
            continue
        for node in ast.parse(block).body:
            if not isinstance(node, ast.AsyncFunctionDef):
                continue
            args = node.args.args
            defaults = [None] * (len(args) - len(node.args.defaults)) + node.args.defaults
            out[node.name] = {a.arg: (d is None, None if d is None else ast.literal_eval(d))
                              for a, d in zip(args, defaults, strict=True)}
    return out


def test_the_context_tools_have_the_specifications_signatures(tmp_path: Path) -> None:
    spec = context_signatures()
    assert set(spec) == {"get_relevant_context", "get_iteration_history", "get_skills",
                         "store_context", "mark_useful", "store_iteration_result",
                         "summarize_old_context", "prune_low_value_context",
                         "get_context_stats", "health_check"}
    schemas = tool_schemas(make_store(tmp_path / "store"))
    for tool, params in spec.items():
        schema = schemas[tool]
        required = set(schema.get("required", []))
        for name, (needed, default) in params.items():
            prop = schema["properties"].get(name)
            assert prop is not None, f"{tool}.{name}"
            assert (name in required) == needed, (tool, name)
            if not needed:
                assert prop.get("default") == default, (tool, name, prop)
        assert required <= set(params), f"{tool} requires more than the specification"


def test_the_context_tools_answer_the_specifications_calls(tmp_path: Path) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server(make_store(tmp_path / "store"))) as client:
                stored = await client.call_tool("store_context", {
                    "content": "When implementing file operations, check the path first.",
                    "context_type": "skill", "tags": ["files"]})
                assert not stored.is_error, stored.content
                got = await client.call_tool("get_relevant_context", {
                    "query": "implementing file operations", "max_items": 10,
                    "context_types": ["skill"], "min_score": 0.0})
                assert not got.is_error, got.content
                out = got.structured_content
                assert out is not None and {"items", "stats"} <= set(out)  # its docstring
                assert out["items"] and "file operations" in out["items"][0]["content"]
                for tool in ("get_iteration_history", "get_skills", "summarize_old_context",
                             "prune_low_value_context", "get_context_stats", "health_check"):
                    answered = await client.call_tool(tool, {})
                    assert not answered.is_error, (tool, answered.content)

    anyio.run(main)


def presets() -> dict[str, dict[str, str]]:
    text = (SEEDS / "progressive-context-server.md").read_text()
    table = text.split("### Configuration Presets", 1)[1].split("\n\n", 2)[1]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()]
    names = [n.lower() for n in rows[0][1:]]
    return {name: {row[0]: row[i + 1] for row in rows[2:]} for i, name in enumerate(names)}


KEY = {"persistence": "persistence", "max_size_mb": "max_size_mb",
       "max_items_per_query": "max_items_per_query",
       "summarize_after": "summarize_after_iterations"}


def context_config(sediment: Runner, root: Path, toml: str) -> dict[str, Any]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "sediment.toml").write_text(toml)
    r = sediment("context", "config", "--json", cwd=root)
    assert r.code == 0, r.err
    return {k: v["value"] for k, v in r.json()["settings"].items()}


@pytest.mark.parametrize("preset", ["minimal", "standard", "aggressive"])
def test_the_configuration_presets(tmp_path: Path, sediment: Runner, preset: str) -> None:
    table = presets()[preset]
    assert set(table) == {*KEY, "embeddings"}  # embeddings: the project's [embedder]
    got = context_config(sediment, tmp_path, f'[context]\npreset = "{preset}"\n')
    for row, key in KEY.items():
        assert str(got[key]) == table[row], (preset, row)


def test_the_yaml_configurations_values_are_the_defaults(tmp_path: Path,
                                                         sediment: Runner) -> None:
    [block] = [b for b in blocks("progressive-context-server.md", "yaml") if "mcp_context" in b]
    spec = yaml.safe_load(block)["learning"]["mcp_context"]
    got = context_config(sediment, tmp_path, "")
    # storage.path and backend are the Python server's (Sediment keeps the store beside
    # the layers); embeddings are the project's [embedder].
    storage = {k: spec["storage"][k] for k in ("max_size_mb", "persistence")}
    expected = {**spec["retrieval"], **spec["lifecycle"], **storage, **spec["scoring"]}
    for key, value in expected.items():
        assert key in got, key
        assert got[key] == value, (key, got[key], value)

"""The Lua sandbox: every way out is closed, and a bad script fails only its resolution."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from mcp import Client
from sediment.agents import LuaPersona, Registry
from sediment.embed import HashEmbedder
from sediment.errors import AgentError, AgentTimeoutError
from sediment.ops.service import ContextService
from sediment.server import build_server
from sediment.server.prompts import ServiceContext, add_prompts
from sediment.store import LayerSet
from tests.conftest import files_workspace
from tests.mcp.conftest import make_store

TOOLS = frozenset({"agents_search"})


@pytest.fixture
def context(tmp_path: Path) -> ServiceContext:
    store = make_store(tmp_path / "store")
    return ServiceContext(ContextService(LayerSet.from_directory(store), HashEmbedder()))


def persona(tmp_path: Path, body: str, *, name: str = "probe", timeout: float = 5.0,
            top: str = "") -> LuaPersona:
    script = tmp_path / f"{name}.lua"
    script.write_text(f"{top}\nlocal agent = {{ description = 'probe' }}\n"
                      f"function agent.resolve(args, config, context)\n{body}\nend\n"
                      "return agent\n")
    return LuaPersona(name, script, config={}, allowed=TOOLS,
                      aliases={"search": "agents_search"}, timeout=timeout)


def probe(tmp_path: Path, context: ServiceContext, expr: str) -> str:
    """What ``expr`` gives inside resolve: its type, or "error: ..." when it raises."""
    p = persona(tmp_path, f"local ok, v = pcall(function() return {expr} end)\n"
                          "return { system = ok and type(v) or ('error: ' .. tostring(v)) }")
    return p.resolve({}, context).system


@pytest.mark.parametrize("expr", [
    "os", "io", "load", "loadstring", "dofile", "loadfile", "require", "debug", "package",
    "collectgarbage", "coroutine", "getmetatable", "setmetatable", "rawget", "rawset",
    "print", "python", "string.dump", "math.random", "_G.os", "_ENV.io", "_G.debug",
    "(''):dump()", "('x').dump", "string.dump or ('').dump",
])
def test_host_functions_are_absent(tmp_path: Path, context: ServiceContext,
                                   expr: str) -> None:
    got = probe(tmp_path, context, expr)
    assert got == "nil" or got.startswith("error: "), got


@pytest.mark.parametrize("expr", [
    "context.search.__class__", "context.search.__globals__", "context.get.__self__",
    "context.sources.__call__", "context.search.__code__",
])
def test_python_attributes_are_refused(tmp_path: Path, context: ServiceContext,
                                       expr: str) -> None:
    p = persona(tmp_path, f"return {{ system = tostring({expr}) }}")
    with pytest.raises(AgentError, match="access to Python attributes is not allowed"):
        p.resolve({}, context)


def test_strings_metatable_is_out_of_reach(tmp_path: Path, context: ServiceContext) -> None:
    assert probe(tmp_path, context, "getmetatable('')") == "error: " \
        "probe.lua:4: attempt to call a nil value (global 'getmetatable')"
    assert probe(tmp_path, context, "string.rep") == "function"
    assert probe(tmp_path, context, "('abc'):upper()") == "string"


def test_bytecode_and_loaders_cannot_run_code(tmp_path: Path, context: ServiceContext) -> None:
    p = persona(tmp_path, "return { system = load('return 1')() }")
    with pytest.raises(AgentError, match=r"attempt to call a nil value \(global 'load'\)"):
        p.resolve({}, context)
    script = tmp_path / "bytecode.lua"
    script.write_bytes(b"\x1bLuaT\x00")
    with pytest.raises(AgentError, match="attempt to load a binary chunk"):
        LuaPersona("bytecode", script, config={}, allowed=TOOLS, aliases={})


def test_no_state_survives_between_resolutions(tmp_path: Path,
                                               context: ServiceContext) -> None:
    p = persona(tmp_path, "local before = tostring(leaked)\nleaked = 'yes'\n"
                          "string.extra = 'x'\n"
                          "return { system = before .. ' ' .. tostring(string.extra) }")
    assert p.resolve({}, context).system == "nil x"
    assert p.resolve({}, context).system == "nil x"


def test_an_endless_loop_times_out(tmp_path: Path, context: ServiceContext) -> None:
    p = persona(tmp_path, "while true do end", timeout=0.3)
    with pytest.raises(AgentTimeoutError, match=r"ran past its time limit of 0\.3s"):
        p.resolve({}, context)


def test_pcall_cannot_swallow_the_timeout(tmp_path: Path, context: ServiceContext) -> None:
    p = persona(tmp_path, "while true do pcall(function() while true do end end) end\n"
                          "return { system = 'escaped' }", timeout=0.3)
    with pytest.raises(AgentTimeoutError):
        p.resolve({}, context)
    p = persona(tmp_path, "local ok = xpcall(function() while true do end end, "
                          "function() return 'caught' end)\nreturn { system = 'escaped' }",
                timeout=0.3)
    with pytest.raises(AgentTimeoutError):
        p.resolve({}, context)


def test_a_loop_at_load_time_times_out(tmp_path: Path) -> None:
    script = tmp_path / "top.lua"
    script.write_text("while true do end")
    with pytest.raises(AgentTimeoutError):
        LuaPersona("top", script, config={}, allowed=TOOLS, aliases={}, timeout=0.3)


def test_unbounded_allocation_hits_the_memory_limit(tmp_path: Path,
                                                    context: ServiceContext) -> None:
    p = persona(tmp_path, "local t = {}\nwhile true do t[#t + 1] = string.rep('x', 4096) .. #t "
                          "end", timeout=60)
    with pytest.raises(AgentError, match="ran out of memory"):
        p.resolve({}, context)
    p = persona(tmp_path, "local ok = pcall(string.rep, 'x', 1 << 30)\n"
                          "local t = {}\nwhile true do t[#t + 1] = {} end", timeout=60)
    with pytest.raises(AgentError, match="ran out of memory"):
        p.resolve({}, context)


def test_an_error_names_the_persona_and_line(tmp_path: Path, context: ServiceContext) -> None:
    p = persona(tmp_path, "error('boom')")
    with pytest.raises(AgentError, match=r"^persona probe: the script failed: probe.lua:4: "
                                         r"boom$"):
        p.resolve({}, context)


def test_context_calls_check_their_input(tmp_path: Path, context: ServiceContext) -> None:
    p = persona(tmp_path, "return { system = tostring(#context.search({ query = 'x', k = "
                          "'ten' })) }")
    with pytest.raises(AgentError, match="k: expected an integer, got 'ten'"):
        p.resolve({}, context)
    p = persona(tmp_path, "return { system = tostring(context.get('1')) }")
    with pytest.raises(AgentError, match=r"context\.get takes a chunk id"):
        p.resolve({}, context)
    p = persona(tmp_path, "return { system = tostring(context.search({ query = tostring })) }")
    with pytest.raises(AgentError, match="cannot pass a Lua function"):
        p.resolve({}, context)


def test_context_functions_reach_the_store(tmp_path: Path, context: ServiceContext) -> None:
    p = persona(tmp_path, """
        local hits = context.search({ query = 'billing header', k = 1, mode = 'keyword' })
        local doc = context.get(hits[1].id)
        local missing = context.get(999)
        local layers = context.sources()
        return { system = doc.content .. '|' .. tostring(missing) .. '|' .. layers[1].name
                 .. '|' .. layers[1].chunks }""")
    out = p.resolve({}, context)
    assert out.system == ("Requests to /billing MUST include the X-Account header.|nil|base|3")
    assert out.stats == {"searches": 1, "gets": 2, "sources": 1}


def test_the_specifications_search_options(tmp_path: Path, context: ServiceContext) -> None:
    """``limit`` for ``k``, ``mode = "keyword"``, ``filters.source`` by path prefix (ending
    at a '/'), and ``{}`` (Lua's only empty list or map) wherever a table is expected."""
    def ids(opts: str) -> str:
        p = persona(tmp_path, f"""
            local out = {{}}
            for _, hit in ipairs(context.search({opts})) do out[#out + 1] = hit.sources[1] end
            return {{ system = table.concat(out, ','), tools = {{}}, messages = {{}} }}""")
        return p.resolve({}, context).system

    assert ids("{ query = 'billing deploy layer', limit = 2 }").count(",") == 1
    assert ids("{ query = 'billing', mode = 'keyword', limit = 5, "
               "filters = { source = 'docs/b.md' } }") == "docs/b.md:3"
    assert ids("{ query = 'layer', mode = 'keyword', filters = { source = 'docs' } }") \
        == "docs/a.md:1"
    assert ids("{ query = 'layer', mode = 'keyword', filters = { source = 'doc' } }") == ""
    assert ids("{ query = 'layer', mode = 'keyword', filters = {} }") == "docs/a.md:1"
    with pytest.raises(AgentError, match="give k or limit"):
        ids("{ query = 'x', k = 1, limit = 2 }")
    with pytest.raises(AgentError, match=r"filters\.source: must be a non-empty string"):
        ids("{ query = 'x', filters = { source = '' } }")


def test_empty_tables_are_empty_lists(tmp_path: Path, context: ServiceContext) -> None:
    script = tmp_path / "empty.lua"
    script.write_text("agent = {}\nagent.description = 'd'\nagent.tools = {}\n"
                      "agent.arguments = {}\nfunction agent.resolve(args, config, context)\n"
                      "  return { system = 's', messages = {}, tools = {} }\nend\n"
                      "return agent\n")
    p = LuaPersona("empty", script, config={}, allowed=TOOLS, aliases={})
    assert p.info.tools == () and p.info.arguments == ()
    out = p.resolve({}, context)
    assert (out.system, out.tools, out.messages) == ("s", (), ())


def test_get_returns_the_document(tmp_path: Path, context: ServiceContext) -> None:
    p = persona(tmp_path, """
        local doc = context.get(2)
        return { system = doc.title .. '|' .. doc.body .. '|' .. doc.path .. '|'
                 .. #doc.chunks .. '|' .. doc.content }""")
    text = "Requests to /billing MUST include the X-Account header."
    assert p.resolve({}, context).system == f"b.md|{text}|docs/b.md|1|{text}"


def test_malformed_results_are_agent_errors(tmp_path: Path, context: ServiceContext) -> None:
    for body, message in [
        ("return 'text'", "must return a table with system"),
        ("return { system = 1 }", "must return system as a string"),
        ("return { system = 's', extra = 1 }", "unknown key"),
        ("return { system = 's', messages = {{ role = 'tool', content = 'x' }} }",
         r"messages\[0\] must have role"),
        ("return { system = 's', tools = { 'rm -rf' } }", "tool name 'rm -rf' must be"),
        ("return {}", "must return a table with system .a string., got an empty table"),
        ("return { system = 's', messages = { tostring } }", "cannot pass a Lua function"),
    ]:
        with pytest.raises(AgentError, match=message):
            persona(tmp_path, body).resolve({}, context)


def test_the_server_keeps_serving_after_bad_scripts(tmp_path: Path,
                                                    context: ServiceContext) -> None:
    bad = {
        "loops": persona(tmp_path, "while true do end", name="loops", timeout=0.3),
        "allocates": persona(tmp_path, "local t = {} while true do t[#t+1] = {} end",
                             name="allocates", timeout=60),
        "fails": persona(tmp_path, "error('boom')", name="fails"),
    }
    good = persona(tmp_path, "return { system = 'fine' }", name="good")
    files = context.service.store.layer_files()
    assert files is not None
    server = build_server(files_workspace(files))
    add_prompts(server, Registry([*bad.values(), good]), context, "tester")

    async def main() -> None:
        with anyio.fail_after(120):
            async with Client(server) as client:
                for name, message in [("loops", "ran past its time limit of 0.3s"),
                                      ("allocates", "ran out of memory"),
                                      ("fails", "boom")]:
                    with pytest.raises(MCPError, match=message):
                        await client.get_prompt(name)
                    got = await client.get_prompt("good")
                    assert got.messages[0].content.text.endswith("fine")  # type: ignore[union-attr]
                    hits = await client.call_tool("agents_search", {"query": "deploy"})
                    assert not hits.is_error

    anyio.run(main)

"""Loading personas: configuration tables, Lua scripts, Python from trusted places only."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sediment.agents import Registry, load_registry
from sediment.config import load_config
from sediment.errors import ConfigError, NotFoundError, RequestError
from tests.conftest import Runner

TOOLS = ["agents_search", "agents.search", "agents_context_write", "search_knowledge",
         "save_memory"]
PERSONA_MODULE = '''
description = "Knows the {db} database"
tools = ["search", "save_memory"]
arguments = [{"name": "table", "description": "A table", "required": False}]


def resolve(args, config, context):
    hits = context.search({"query": args.get("table", "users"), "k": 1})
    return {"system": f"Database {config.get('database', 'main')}: {len(hits)} hit(s)",
            "messages": [{"role": "user", "content": "Which query is slow?"}]}
'''


def registry(tmp_path: Path, toml: str) -> Registry:
    (tmp_path / "sediment.toml").write_text(toml)
    cfg = load_config(tmp_path, env={})
    return load_registry(cfg.agents.values(), TOOLS, installed=False)


def test_a_toml_persona(tmp_path: Path) -> None:
    reg = registry(tmp_path, '''
[agents.reviewer]
description = "Reviews"
tools = ["search", "agents_search", "save_memory"]
system_prompt = "Review {{ lang }} code; {{unknown}} stays."
arguments = [{ name = "lang", required = true }]
''')
    [info] = reg.list()
    assert info.to_dict() == {"name": "reviewer", "description": "Reviews",
                              "tools": ["agents_search", "save_memory"], "source": "toml",
                              "arguments": [{"name": "lang", "description": "",
                                             "required": True}]}
    out = reg.resolve("reviewer", {"lang": "Rust"}, context=None)  # type: ignore[arg-type]
    assert out.system == "Review Rust code; {{unknown}} stays."
    with pytest.raises(RequestError, match="argument lang is required"):
        reg.resolve("reviewer", {}, context=None)  # type: ignore[arg-type]
    with pytest.raises(RequestError, match="unknown argument 'colour'"):
        reg.resolve("reviewer", {"lang": "x", "colour": "red"}, context=None)  # type: ignore[arg-type]
    with pytest.raises(RequestError, match="argument lang must be a string, got int"):
        reg.resolve("reviewer", {"lang": 3}, context=None)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match=r"no persona 'nope' \(personas: reviewer\)"):
        reg.resolve("nope", {}, context=None)  # type: ignore[arg-type]


def broken(reg: Registry) -> dict[str, str]:
    return {b.name: b.error for b in reg.broken()}


def test_unserved_tools_pass_through_with_a_warning(tmp_path: Path) -> None:
    """The personas specification names tools the client serves (``create_jira_ticket``):
    they reach the client as written, and the registry names them for a warning."""
    reg = registry(tmp_path, '[agents.reviewer]\nsystem_prompt = "x"\n'
                             'tools = ["search", "get", "create_jira_ticket", "search"]\n')
    [info] = reg.list()
    assert info.tools == ("agents_search", "get", "create_jira_ticket")  # no agents_get here
    assert reg.warnings() == ["warning: persona reviewer: Sediment does not serve 'get', "
                              "'create_jira_ticket'; passed to the client as written (its "
                              "own tools)"]
    assert reg.warnings("reviewer", ["agents_search", "page_oncall"])[0].endswith(
        "'get', 'create_jira_ticket', 'page_oncall'; passed to the client as written (its "
        "own tools)")
    (tmp_path / "s.lua").write_text(
        "return { tools = { 'delete_everything' }, resolve = function() end }")
    assert registry(tmp_path, '[agents.script.lua]\npath = "s.lua"\n').list()[0].tools == (
        "delete_everything",)


def test_the_short_names_follow_the_served_tools(tmp_path: Path) -> None:
    (tmp_path / "sediment.toml").write_text(
        '[agents.r]\nsystem_prompt = "x"\ntools = ["search", "get", "sources"]\n')
    cfg = load_config(tmp_path, env={})
    reg = load_registry(cfg.agents.values(), [*TOOLS, "agents_get", "agents_sources"],
                        installed=False)
    assert reg.list()[0].tools == ("agents_search", "agents_get", "agents_sources")
    assert reg.warnings() == []


@pytest.mark.parametrize("name", ["rm -rf", "", "x" * 129, "tool/../x", "a\nb", "ab\n"])
def test_a_tool_name_no_client_could_call_is_an_error(tmp_path: Path, name: str) -> None:
    """It is a load error, so the persona is broken (listed with why), not served."""
    reg = registry(tmp_path, f'[agents.reviewer]\nsystem_prompt = "x"\ntools = [{name!r}]\n'
                   .replace("'", '"'))
    assert reg.list() == []
    assert re.search(r"persona reviewer: tool name .* must be 1-128 letters, digits, '_', "
                     r"'-' or '.'", broken(reg)["reviewer"])
    with pytest.raises(NotFoundError, match=r"persona reviewer failed to load: .*tool name"):
        reg.find("reviewer")


@pytest.mark.parametrize(("toml", "message"), [
    ('[agents.r]\ntools = []\n', r"\[agents.r\]: system_prompt \(a non-empty string\) is required"),
    ('[agents.r]\nsystem_prompt = "x"\nmodel = "gpt"\n', r"\[agents.r\]: unknown key\(s\) model;"),
    ('[agents.r]\nsystem_prompt = "x"\ntools = "search"\n', "tools must be a list"),
    ('[agents.r]\nsystem_prompt = "x"\narguments = [{ name = "a b" }]\n',
     r"arguments\[0\].name must be"),
    ('[agents."bad name"]\nsystem_prompt = "x"\n', "a persona name is"),
    ('[agents."trailing\\n"]\nsystem_prompt = "x"\n', "a persona name is"),
    ('[agents.script.s]\ntimeout = 5\n', r"path \(the Lua script"),
    ('[agents.script.s]\npath = "missing.lua"\n', "persona s: cannot read"),
    ('[agents.script.s]\npath = "s.lua"\ntimeout = 0\n', "timeout must be a number"),
    ('[agents.script.s]\npath = "s.lua"\ntimeout = true\n', "timeout must be a number"),
])
def test_bad_definitions_are_broken_personas(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "s.lua").write_text("return { resolve = function() end }")
    reg = registry(tmp_path, toml + '\n[agents.fine]\nsystem_prompt = "ok"\n')
    assert [i.name for i in reg.list()] == ["fine"]
    [error] = broken(reg).values()
    assert re.search(message, error), error


def test_a_bad_agents_table_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[agents\] must be dict"):
        registry(tmp_path, "agents = 3\n")


def test_a_repository_cannot_define_python_personas(tmp_path: Path, sediment: Runner) -> None:
    (tmp_path / "sediment.toml").write_text('[agents.python.evil]\nobject = "os:system"\n')
    r = sediment("agent", "list", cwd=tmp_path)
    assert r.code == 1
    assert "[agents.python] is allowed only in the user config" in r.err


def _user_config(text: str) -> Path:
    path = Path(os.environ["SEDIMENT_USER_CONFIG"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_python_persona_from_the_user_config(tmp_path: Path, sediment: Runner) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "acme_db.py").write_text(PERSONA_MODULE.replace('"search", "save_memory"',
                                                           '"search", "write"'))
    _user_config('[agents.python.db-expert]\nobject = "acme_db"\ndatabase = "orders"\n')
    project = tmp_path / "p"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "a.md").write_text("# Users\n\nThe users table is large.\n")
    assert sediment("compile", "--root", str(project), "--out",
                    str(project / "AGENTS.db"), cwd=project).code == 0
    env = {"PYTHONPATH": str(lib)}
    listed = sediment("agent", "list", cwd=project, env=env)
    assert listed.code == 0, listed.err
    assert "db-expert" in listed.out and "[python]" in listed.out
    r = sediment("agent", "test", "db-expert", "--arg", "table=users", "--json",
                 cwd=project, env=env)
    assert r.code == 0, r.err
    out = r.json()
    assert out["system"] == "Database orders: 1 hit(s)"
    assert out["tools"] == ["agents_search", "agents_context_write"]
    assert out["source"] == "python" and out["searches"] == 1


def test_python_persona_from_an_installed_entry_point(tmp_path: Path,
                                                      sediment: Runner) -> None:
    site = tmp_path / "site"
    dist = site / "acme_personas-0.1.dist-info"
    dist.mkdir(parents=True)
    (site / "acme_personas.py").write_text(PERSONA_MODULE.replace(', "save_memory"', ""))
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-personas\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[sediment.agents]\nsql-helper = acme_personas\n")
    r = sediment("agent", "list", "--json", cwd=tmp_path, env={"PYTHONPATH": str(site)})
    assert r.code == 0, r.err
    [agent] = r.json()["agents"]
    assert agent["name"] == "sql-helper" and agent["source"] == "python"
    assert agent["tools"] == ["agents_search"]
    r = sediment("agent", "test", "sql-helper", cwd=tmp_path, env={"PYTHONPATH": str(site)})
    assert r.code == 0, r.err
    assert "Database main: 0 hit(s)" in r.out and "[user] Which query is slow?" in r.out


def test_a_broken_entry_point_is_listed_as_broken(tmp_path: Path, sediment: Runner) -> None:
    site = tmp_path / "site"
    dist = site / "broken-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[sediment.agents]\nbroken = no_such_module\n")
    (tmp_path / "sediment.toml").write_text('[agents.fine]\nsystem_prompt = "ok"\n')
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    r = sediment("agent", "list", "--json", cwd=tmp_path, env={"PYTHONPATH": path})
    assert r.code == 0, r.err
    assert [a["name"] for a in r.json()["agents"]] == ["fine"]
    [b] = r.json()["broken"]
    assert b["name"] == "broken" and b["source"] == "python"
    assert b["origin"] == "entry point no_such_module"
    assert b["error"].startswith("persona broken: cannot load entry point 'no_such_module'")


def test_a_persona_cannot_shadow_another_prompt(tmp_path: Path, sediment: Runner) -> None:
    (tmp_path / "sediment.toml").write_text('[agents.memory_guidelines]\nsystem_prompt = "x"\n')
    r = sediment("agent", "list", cwd=tmp_path)
    assert r.code == 0, r.err
    assert "persona memory_guidelines: the server already has a prompt of that name" in r.out
    assert "BROKEN" in r.out

"""Every field an agent writes is checked (issue 26, items 10 and 12): credentials in names,
tags, tool calls, metadata and sources; whitespace-only text; non-finite numbers; metadata
too large or too deep. Through the MCP tools (both backends) and the real command."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp import Client
from sediment.credentials import MAX_METADATA_DEPTH, check_metadata
from sediment.embed import HashEmbedder
from sediment.errors import ValidationError
from sediment.pg.database import Database
from sediment.server import build_server
from sediment.workspace import Workspace
from tests.conftest import Runner, env_places, files_workspace
from tests.context.conftest import BACKENDS
from tests.mcp.conftest import make_store

GITHUB = "ghp_" + "x7Kp2Lm9Qr4Tv8Wz1Yb3Nc6Hd5Fg0Js2Ae4"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
TIMEOUT = 120


def deep(n: int) -> dict[str, Any]:
    out: dict[str, Any] = {"leaf": 1}
    for _ in range(n - 1):
        out = {"x": out}
    return out


@pytest.fixture(params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("SEDIMENT_ACTOR", "ralph")
    monkeypatch.setenv("SEDIMENT_DATA_DIR", str(tmp_path / "data"))
    if request.param == "files":
        yield build_server(files_workspace(make_store(tmp_path / "store")))
        return
    team = Workspace.over_database(Database(request.getfixturevalue("pg_url")),
                                   HashEmbedder(), env_places())
    try:
        yield build_server(team)
    finally:
        team.close()


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("store_context", {"content": "   \n\t ", "context_type": "task"},
     "content must not be empty or whitespace only"),
    ("store_context", {"content": "a note", "context_type": "task", "tags": [GITHUB]},
     "tags[0] looks like it contains a credential"),
    ("store_context", {"content": "a note", "context_type": "task", "tags": ["  "]},
     "tags[0] must not be empty"),
    ("store_context", {"content": "a note", "context_type": "task",
                       "metadata": {"auth": {"headers": [f"Authorization: Bearer {STRIPE}"]}}},
     "metadata.auth.headers[0] looks like it contains a credential"),
    ("store_context", {"content": "a note", "context_type": "task",
                       "metadata": {"password": "Tr0ub4dor&3-horse"}},
     "metadata.password looks like it contains a credential"),
    ("store_context", {"content": "a note", "context_type": "task",
                       "metadata": {"blob": "x" * (2 * 1024 * 1024)}},
     "bytes as JSON; the limit is 65,536"),
    ("store_context", {"content": "a note", "context_type": "task", "metadata": deep(60)},
     f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep"),
    ("store_iteration_result", {"iteration": 1, "summary": "ran the tests", "success": True,
                                "tool_calls": ["bash", f"curl -u x:{STRIPE} api"]},
     "tool_calls[1] looks like it contains a credential"),
    ("store_iteration_result", {"iteration": 1, "summary": "ran", "success": True,
                                "artifacts": [f"https://ci:{STRIPE}@ci.example/log"]},
     "artifacts[0] looks like it contains a credential"),
    ("store_iteration_result", {"iteration": 1, "summary": " ", "success": True},
     "summary must not be empty"),
    ("store_iteration_result", {"iteration": 1, "summary": "ran", "success": False,
                                "error": "\n"}, "error must not be empty"),
    ("save_memory", {"content": "The staging key rotates monthly.", "category": "fact",
                     "context": GITHUB}, "context looks like it contains a credential"),
    ("save_memory", {"content": "The staging key rotates monthly.", "category": "fact",
                     "scope": "project", "related_to": [f"{STRIPE}:1"]},
     "related_to[0] looks like it contains a credential"),
    ("save_memory", {"content": " \t ", "category": "fact"}, "content must be a non-empty"),
    ("agents_context_write", {"content": "A note.", "kind": "note", "confidence": 0.5,
                              "sources": [f"{GITHUB}:1"], "scope": "local"},
     "sources[0] looks like it contains a credential"),
]


def test_every_free_text_field_is_checked(server: Any, tmp_path: Path) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                assert {tool for tool, _, _ in REFUSED} <= tools
                for tool, args, message in REFUSED:
                    r = await client.call_tool(tool, args)
                    text = "\n".join(getattr(c, "text", "") for c in r.content)
                    assert r.is_error and message in text, (tool, args, text)
                    assert GITHUB not in text and STRIPE not in text
                stats = await client.call_tool("get_context_stats", {})
                assert stats.structured_content["total"] == 0
                listed = await client.call_tool("manage_memory", {"action": "list"})
                assert listed.structured_content["memories"] == []

    anyio.run(main)
    for f in tmp_path.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert GITHUB.encode() not in data and STRIPE.encode() not in data, f


def test_mark_useful_reasons_are_checked(server: Any) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                stored = await client.call_tool("store_context", {
                    "content": "Cache the date parser.", "context_type": "skill"})
                item = stored.structured_content["id"]
                r = await client.call_tool("mark_useful", {
                    "item_id": item, "helpful": True, "reason": f"token {GITHUB}"})
                assert r.is_error and "reason looks like it contains a credential" in \
                    "\n".join(getattr(c, "text", "") for c in r.content)

    anyio.run(main)


def test_the_command_refuses_non_finite_numbers_and_blank_text(sediment: Runner,
                                                                tmp_path: Path) -> None:
    runs = [
        (("context", "store", "x", "--type", "task", "--metadata", '{"score": NaN}'),
         "metadata.score must be a finite number, got nan"),
        (("context", "store", "x", "--type", "task", "--metadata", '{"a": [1, Infinity]}'),
         "metadata.a[1] must be a finite number, got inf"),
        (("context", "store", "x", "--type", "task", "--metadata", json.dumps(deep(900))),
         f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep"),
        (("context", "store", "   ", "--type", "task"),
         "content must not be empty or whitespace only"),
        (("context", "iteration", "1", "done", "--cost", "inf"),
         "cost must be a finite number, got inf"),
        (("memory", "save", "The deploy runs nightly.", "--category", "fact",
          "--context", STRIPE), "context looks like it contains a credential"),
        (("memory", "contexts", "deploys", "--description", f"uses {GITHUB}"),
         "description looks like it contains a credential"),
        (("memory", "contexts", "deploys", "--description", "  "),
         "description must not be empty"),
    ]
    for args, message in runs:
        r = sediment(*args, "--dir", str(tmp_path))
        assert r.code == 1 and message in r.err and "Traceback" not in r.err, (args, r.err)
    assert not any(STRIPE.encode() in f.read_bytes() or GITHUB.encode() in f.read_bytes()
                   for f in tmp_path.rglob("*") if f.is_file())


JSON_LEAF = st.none() | st.booleans() | st.integers(-10**6, 10**6) | \
    st.floats(allow_nan=False, allow_infinity=False) | st.text(alphabet="abc xyz-_.", max_size=12)
JSON = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(alphabet="abcxyz", max_size=6), inner, max_size=3),
                    max_leaves=20)


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(st.text(alphabet="abcxyz", max_size=6), JSON, max_size=4))
def test_ordinary_metadata_is_kept_as_given(value: dict[str, Any]) -> None:
    assert check_metadata(value) == value


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(st.text(alphabet="abcxyz", max_size=6), JSON, min_size=1, max_size=4),
       st.sampled_from([math.nan, math.inf, -math.inf]), st.integers(0, 50))
def test_a_non_finite_number_anywhere_is_refused(value: dict[str, Any], bad: float,
                                                 seed: int) -> None:
    target: Any = value
    path = "metadata"
    for _ in range(seed % 4):
        inner = [k for k, v in target.items() if isinstance(v, dict)] \
            if isinstance(target, dict) else []
        if not inner:
            break
        k = inner[seed % len(inner)]
        target, path = target[k], f"{path}.{k}"
    target["bad"] = bad
    with pytest.raises(ValidationError, match="must be a finite number"):
        check_metadata(value)
    assert json.dumps(value)  # Python's own json would have written it: NaN is not JSON


def test_an_empty_description_still_clears_a_context(sediment: Runner) -> None:
    for text in ("Deploy notes", ""):
        r = sediment("memory", "contexts", "deploys", "--description", text, "--json")
        assert r.code == 0, r.err
    listed = sediment("memory", "contexts", "--json").json()["contexts"]
    assert [(c["name"], c["description"]) for c in listed] == [("deploys", "")]

"""A 60-iteration scripted agent loop through the official MCP SDK client (issue 17)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp import Client
from sediment.context import count_tokens
from sediment.embed import HashEmbedder
from sediment.pg.database import Database
from sediment.server import build_server
from sediment.workspace import Workspace
from tests.conftest import env_places, files_workspace
from tests.context.conftest import BACKENDS
from tests.context.test_query_feedback import (
    DISTRACTORS,
    MARKED,
    OTHERS,
    SIMILAR,
    TARGET,
    UNRELATED,
)
from tests.mcp.conftest import make_store

TIMEOUT = 120
TOOLS = {"get_relevant_context", "get_iteration_history", "get_skills", "store_context",
         "store_iteration_result", "mark_useful", "summarize_old_context",
         "prune_low_value_context", "get_context_stats", "health_check"}


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture(params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The server with the context (and memory) services of each backend."""
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


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    r = await client.call_tool(tool, args)
    assert not r.is_error, (tool, text_of(r))
    out: dict[str, Any] = r.structured_content
    return out


def test_sixty_iteration_loop(server: Any) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert names >= TOOLS
                skill = await call(client, "store_context", {
                    "content": "Run the database migrations before the integration tests.",
                    "context_type": "skill", "tags": ["testing"]})
                task = await call(client, "store_context", {
                    "content": "Make the integration tests pass.", "context_type": "task"})
                marked: set[str] = set()
                for i in range(1, 61):
                    error = f"OperationalError: table users_{i} missing." if i % 6 == 0 \
                        else None
                    await call(client, "store_iteration_result", {
                        "iteration": i, "summary": f"Worked on endpoint {i}. Added its tests.",
                        "success": error is None, "duration_ms": 1000 + i,
                        "tokens_used": 500, "cost": 0.01, "error": error})
                    got = await call(client, "get_relevant_context", {
                        "query": "integration tests fail: table missing", "max_items": 8,
                        "min_score": 0.0, "max_tokens": 300})
                    assert got["tokens"] <= 300
                    assert count_tokens(got["block"]) <= 300
                    assert got["block"].startswith(
                        "## Relevant Context from Previous Iterations")
                    for item in got["items"]:
                        f = item["factors"]
                        assert set(f) == {"semantic", "recency", "usefulness", "type_match"}
                        total = sum(v["contribution"] for v in f.values())
                        assert abs(total - item["score"]) < 1e-3
                    if i % 10 == 0:
                        first = got["items"][0]["id"]
                        await call(client, "mark_useful", {"item_id": first, "helpful": True})
                        marked.add(first)
                    if i == 30:
                        summary = await call(client, "summarize_old_context",
                                             {"older_than_iterations": 20})
                        assert summary["summaries"]
                        assert all(s["sources"] for s in summary["summaries"])
                await call(client, "mark_useful", {"item_id": skill["id"], "helpful": True})
                stats = await call(client, "get_context_stats", {})
                assert stats["runs"] == {"default": 60}
                assert stats["by_state"]["active"] > 0 and stats["by_state"]["aging"] > 0
                assert stats["hidden"]["superseded"] > 0
                done = await call(client, "summarize_old_context", {})
                assert done["archived"] > 0
                stats = await call(client, "get_context_stats", {})
                assert stats["by_state"]["archived"] == done["archived"]
                # the task of the loop never ages out (issue 27: archived after 50)
                got = await call(client, "get_relevant_context", {
                    "query": "Make the integration tests pass.", "max_items": 3,
                    "min_score": 0.0, "context_types": ["task"]})
                assert [(d["id"], d["state"]) for d in got["items"][:1]] == [
                    (task["id"], "active")]
                history = await call(client, "get_iteration_history", {"last_n": 3})
                assert [h["iteration"] for h in history["iterations"]] == [60, 59, 58]
                assert history["iterations"][0]["state"] == "active"
                # an unhelpful item goes; a helpful skill never does
                victim = history["iterations"][2]["id"]
                for _ in range(2):
                    await call(client, "mark_useful", {"item_id": victim, "helpful": False})
                pruned = await call(client, "prune_low_value_context", {"min_score": 0.3})
                assert [d["id"] for d in pruned["removed"]] == [victim]
                skills = await call(client, "get_skills", {"min_score": 0.5})
                assert [s["id"] for s in skills["skills"]] == [skill["id"]]
                health = await call(client, "health_check", {})
                assert health["status"] == "ok"

    anyio.run(main)


@pytest.mark.parametrize(("tool", "args", "field"), [
    ("get_relevant_context", {"query": "x", "max_items": 51}, "max_items"),
    ("get_relevant_context", {"query": "x", "max_items": "5"}, "max_items"),
    ("get_relevant_context", {"query": "x", "min_score": 1.5}, "min_score"),
    ("get_relevant_context", {"query": "x", "context_types": ["bogus"]}, "context_types"),
    ("store_context", {"content": "x", "context_type": "note"}, "context_type"),
    ("store_context", {"content": "x", "context_type": "task", "extra": 1}, "extra"),
    ("mark_useful", {"item_id": "c1"}, "helpful"),
    ("mark_useful", {"item_id": "c1", "helpful": True, "query": "x" * 10_001}, "query"),
    ("get_relevant_context", {"query": "x", "skills_across_runs": "no"},
     "skills_across_runs"),
    ("get_skills", {"min_score": -0.1}, "min_score"),
    ("prune_low_value_context", {"min_score": 2}, "min_score"),
])
def test_bad_arguments_name_the_field(server: Any, tool: str, args: dict[str, Any],
                                      field: str) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                r = await client.call_tool(tool, args)
                assert r.is_error and field in text_of(r), text_of(r)

    anyio.run(main)


def test_store_context_refuses_credentials(server: Any) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                r = await client.call_tool("store_context", {
                    "content": "deploy with AKIAIOSFODNN7EXAMPLE as the key",
                    "context_type": "task"})
                assert r.is_error and "credential" in text_of(r)
                stats = await call(client, "get_context_stats", {})
                assert stats["total"] == 0

    anyio.run(main)


def test_feedback_counts_for_similar_queries_only(server: Any) -> None:
    """mark_useful after get_relevant_context records that query; the vote lifts the item
    for a similar question and leaves an unrelated one's ranking alone."""
    async def ask(client: Client, query: str, k: int) -> list[dict[str, Any]]:
        got = await call(client, "get_relevant_context",
                         {"query": query, "max_items": k, "min_score": 0.0})
        items: list[dict[str, Any]] = got["items"]
        return items

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                ids = [(await call(client, "store_context", {
                    "content": t, "context_type": "output"}))["id"]
                       for t in [*DISTRACTORS, TARGET, *OTHERS]]
                target = ids[len(DISTRACTORS)]
                assert target not in [d["id"] for d in await ask(client, SIMILAR, 2)]
                before = await ask(client, UNRELATED, 4)
                assert target in [d["id"] for d in await ask(client, MARKED, 10)]
                out = await call(client, "mark_useful", {"item_id": target, "helpful": True})
                assert out["query"] == MARKED
                lifted = await ask(client, SIMILAR, 2)
                assert target in [d["id"] for d in lifted]
                after = await ask(client, UNRELATED, 4)
                assert ([(d["id"], d["score"]) for d in after]
                        == [(d["id"], d["score"]) for d in before])
                other = ids[-1]
                out = await call(client, "mark_useful", {
                    "item_id": other, "helpful": True, "query": UNRELATED})
                assert out["query"] == UNRELATED
                stats = await call(client, "get_context_stats", {})
                assert stats["feedback"] == {"helpful": 2, "not_helpful": 0}

    anyio.run(main)


def test_skills_of_other_runs_can_be_left_out(server: Any) -> None:
    """Issue 27: with run_id, skills of every run came back (a hidden meta.skill exemption);
    that is now documented in the schema and switchable per call."""
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                prop = tools["get_relevant_context"].input_schema["properties"][
                    "skills_across_runs"]
                assert "other runs" in prop["description"]
                other = await call(client, "store_context", {
                    "content": "Run the migrations before the tests.",
                    "context_type": "skill", "run_id": "old"})
                own = await call(client, "store_context", {
                    "content": "Run the tests with a fresh database.",
                    "context_type": "skill", "run_id": "new"})
                ask = {"query": "Run the tests", "min_score": 0.0, "run_id": "new"}
                both = await call(client, "get_relevant_context", ask)
                assert {d["id"] for d in both["items"]} == {other["id"], own["id"]}
                mine = await call(client, "get_relevant_context",
                                  {**ask, "skills_across_runs": False})
                assert [d["id"] for d in mine["items"]] == [own["id"]]

    anyio.run(main)

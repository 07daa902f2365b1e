"""One process keeps one connection pool per database: the layers, memories, context and
tokens of a served workspace (``serve --store``) and of ``sediment.open(url)`` share it,
so a client's search, memory save and context write hold one connection, not one per
service; ``push --context`` and ``pull --context`` move the context rows over the store's
pool too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from click.testing import CliRunner

import sediment
from sediment.cli import cli
from sediment.pg import context_transfer
from tests.conftest import Runner
from tests.pg.team import call, mint, seed_project, team_server


def _backends(url: str) -> int:
    """Client connections to the database of ``url``, other than this count's own."""
    with psycopg.connect(url, autocommit=True) as conn:
        got = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()").fetchone()
    assert got is not None
    return int(got[0])


def test_a_served_store_holds_one_connection(pg_url: str, tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    token = mint(pg_url, "alice", "writer")
    with team_server(pg_url, tmp_path) as srv, httpx.Client(base_url=srv.base,
                                                            timeout=30) as http:
        for tool, args in (
                ("agents_search", {"query": "where does the team server keep projects"}),
                ("save_memory", {"content": "The team prefers blue/green deploys.",
                                 "category": "preference", "scope": "project"}),
                ("save_memory", {"content": "Alice reviews on Fridays.",
                                 "category": "fact"}),
                ("store_context", {"content": "Restart the worker with make bounce.",
                                   "context_type": "skill"}),
                ("agents_context_write", {"content": "Deploys go out at noon.",
                                          "kind": "note", "confidence": 0.7}),
                ("agents_search", {"query": "deploys"})):
            r = call(http, token, tool, args)
            assert r.status_code == 200, (tool, r.text)
        assert _backends(pg_url) == 1


def test_the_python_api_holds_one_connection(pg_url: str, tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    with sediment.open(pg_url, embedder="hash", actor="alice") as alice:
        alice.search("where does the team server keep projects")
        alice.save_memory("The team prefers blue/green deploys.", "preference",
                          scope="project")
        alice.store_context("Restart the worker with make bounce.", "skill")
        alice.write("Deploys go out at noon.", kind="note", confidence=0.7)
        assert _backends(pg_url) == 1
    assert _backends(pg_url) == 0


def test_push_and_pull_of_context_use_the_stores_one_pool(
        pg_url: str, tmp_path: Path, sediment: Runner,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The command runs in this process, so the connections it holds when the context rows
    have just been written (push) or read (pull) can be counted: the store's pool's one."""
    src, back = tmp_path / "src", tmp_path / "back"
    src.mkdir()
    back.mkdir()
    alice = {"SEDIMENT_ACTOR": "alice"}
    assert sediment("write", "--dir", str(src), "--kind", "note", "--confidence", "0.9",
                    "--content", "The build uses a pinned toolchain.", env=alice).code == 0
    assert sediment("context", "store", "Always pin the toolchain version.", "--type",
                    "skill", "--dir", str(src), env=alice).code == 0
    held: list[tuple[str, int]] = []

    def counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            held.append((name, _backends(pg_url)))
            return out
        return run

    for name in ("push_context", "pull_context"):
        monkeypatch.setattr(context_transfer, name,
                            counted(name, getattr(context_transfer, name)))
    monkeypatch.setenv("SEDIMENT_EMBEDDER", "hash")
    for args in (["push", "--dir", str(src)], ["pull", "--dir", str(back)]):
        r = CliRunner().invoke(cli, [*args, "--store", pg_url, "--context", "--actor",
                                      "alice"], catch_exceptions=False)
        assert r.exit_code == 0, r.output
    assert held == [("push_context", 1), ("pull_context", 1)]

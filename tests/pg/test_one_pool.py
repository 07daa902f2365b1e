"""One process keeps one connection pool per database: the layers, memories, context and
tokens of a served workspace (``serve --store``) and of ``sediment.open(url)`` share it,
so a client's search, memory save and context write hold one connection, not one per
service."""

from __future__ import annotations

from pathlib import Path

import httpx
import psycopg

import sediment
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

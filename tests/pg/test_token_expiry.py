"""The team server's tokens can end by themselves, as a token file's can (issue 26, 19)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import psycopg

from sediment.pg.database import Database
from sediment.pg.tokens import PgTokenStore
from tests.conftest import Runner
from tests.pg.team import call, seed_project, team_server


def test_an_expired_database_token_is_refused_by_the_server(pg_url: str,
                                                             tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    now = int(time.time() * 1000)
    db = Database(pg_url, size=1)
    try:
        tokens = PgTokenStore(db)
        live, _ = tokens.create("alice", "writer", now + 3_600_000)
        dead, _ = tokens.create("bob", "writer", now - 1)
        forever, _ = tokens.create("carol", "writer")
        assert [t.expired() for t in tokens.list()] == [False, True, False]
    finally:
        db.close()
    args = {"query": "deploy"}
    with team_server(pg_url, tmp_path) as srv, httpx.Client(base_url=srv.base,
                                                          timeout=60) as http:
        assert call(http, live, "recall_memories", args).status_code == 200
        assert call(http, forever, "recall_memories", args).status_code == 200
        assert call(http, dead, "recall_memories", args).status_code == 401
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE tokens SET expires_at_ms = %s WHERE actor = 'alice'",
                         (now - 1,))
        # every request looks its token up again: the end applies at once
        assert call(http, live, "recall_memories", args).status_code == 401


def test_token_create_with_a_store_takes_an_expiry(sediment: Runner, pg_url: str) -> None:
    made = sediment("token", "create", "--actor", "alice", "--expires", "1h", "--store",
                    pg_url, "--json")
    assert made.code == 0, made.err
    out = json.loads(made.out)
    assert 3_599_000 < out["expires_at_ms"] - out["created_at_ms"] <= 3_600_000
    listed = json.loads(sediment("token", "list", "--store", pg_url, "--json").out)
    assert listed["tokens"][0]["expires_at_ms"] == out["expires_at_ms"]
    text = sediment("token", "list", "--store", pg_url)
    assert "expires " in text.out, text.out
    gone = json.loads(sediment("token", "revoke", out["id"], "--store", pg_url, "--json").out)
    assert gone["revoked"]["expires_at_ms"] == out["expires_at_ms"]

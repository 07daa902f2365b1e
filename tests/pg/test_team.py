"""The team server over PostgreSQL: tokens in the database, roles, and one actor's private
memories and context out of every other actor's reach, by every route."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import psycopg
import pytest

from sediment.context import ContextLoop
from sediment.embed import HashEmbedder
from sediment.errors import ValidationError
from sediment.memory import MemoryService
from sediment.pg.context import PgContextStore
from sediment.pg.database import Database
from sediment.pg.memory import PgMemoryStore
from tests.conftest import Runner
from tests.pg.team import call, mint, seed_project, team_server


def test_tokens_live_hashed_in_the_database(sediment: Runner, pg_url: str) -> None:
    made = sediment("token", "create", "--actor", "alice", "--role", "reviewer", "--store",
                    pg_url, "--json")
    assert made.code == 0, made.err
    info = json.loads(made.out)
    token = info["token"]
    assert token.startswith(f"sdm_{info['id']}_") and info["role"] == "reviewer"
    with psycopg.connect(pg_url) as conn:
        dump = conn.execute("SELECT t::text FROM tokens AS t").fetchall()
    assert len(dump) == 1 and token not in dump[0][0] and token.split("_", 2)[2] not in dump[0][0]
    listed = json.loads(sediment("token", "list", "--store", pg_url, "--json").out)
    assert [(t["id"], t["actor"], t["role"]) for t in listed["tokens"]] == \
        [(info["id"], "alice", "reviewer")]
    assert token not in json.dumps(listed)
    gone = sediment("token", "revoke", info["id"], "--store", pg_url)
    assert gone.code == 0 and "alice" in gone.out
    assert json.loads(sediment("token", "list", "--store", pg_url, "--json").out) == \
        {"tokens": []}
    again = sediment("token", "revoke", info["id"], "--store", pg_url)
    assert again.code == 1 and again.err.startswith("Error: no token with id")


def test_token_commands_refuse_a_bad_role_or_actor(sediment: Runner, pg_url: str) -> None:
    bad = sediment("token", "create", "--actor", "-x", "--role", "writer", "--store", pg_url)
    assert bad.code == 1 and "actor '-x' is invalid" in bad.err


def test_the_server_authenticates_against_the_database(pg_url: str, tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    alice = mint(pg_url, "alice", "writer")
    with team_server(pg_url, tmp_path) as srv, httpx.Client(base_url=srv.base,
                                                          timeout=60) as http:
        assert http.post("/tools/recall_memories", json={"query": "x"}).status_code == 401
        assert call(http, "sdm_00000000_" + "x" * 43, "recall_memories",
                    {"query": "x"}).status_code == 401
        ok = call(http, alice, "save_memory", {"content": "Alice deploys on Tuesdays.",
                                               "category": "fact"})
        assert ok.status_code == 200, ok.text
        with psycopg.connect(pg_url) as conn:
            owner = conn.execute("SELECT owner FROM memories WHERE NOT is_event").fetchall()
        assert owner == [("alice",)]
        tid = alice.split("_")[1]
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DELETE FROM tokens WHERE id = %s", (tid,))
        assert call(http, alice, "recall_memories", {"query": "deploys"}).status_code == 401


def test_text_postgres_cannot_hold_is_a_clear_error(pg_url: str) -> None:
    emb = HashEmbedder()
    db = Database(pg_url)
    try:
        memory = MemoryService(PgMemoryStore(db, dim=emb.profile.dim), emb)
        with pytest.raises(ValidationError, match="cannot hold NUL"):
            memory.save("alice", "tabs\x00and nulls", "fact")
        loop = ContextLoop(PgContextStore(db, dim=emb.profile.dim), emb)
        with pytest.raises(ValidationError, match="cannot hold NUL"):
            loop.store_context("alice", "a\x00b", "task")
    finally:
        db.close()

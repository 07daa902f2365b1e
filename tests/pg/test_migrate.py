"""Migrations: from an empty database, from each earlier version, twice, two at once; the
``sediment db`` commands; clear errors for a server that cannot be used."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from sediment.errors import StoreUnavailableError, ValidationError
from sediment.memory.model import Scope
from sediment.pg import connect, current_version, latest_version, migrate, parse_store_url
from sediment.pg.migrate import migrations
from tests.conftest import Runner


def _tables(url: str) -> set[str]:
    with connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {str(r[0]) for r in rows.fetchall()}


def test_migrate_from_empty_then_again_changes_nothing(pg_empty_url: str) -> None:
    with connect(pg_empty_url) as conn:
        assert current_version(conn) == 0
        applied = migrate(conn)
        assert [m.version for m in applied] == [m.version for m in migrations()]
        assert current_version(conn) == latest_version()
        assert migrate(conn) == []
    assert {"projects", "layers", "chunks", "lexicon", "schema_version"} <= _tables(pg_empty_url)


@pytest.mark.parametrize("start", [m.version for m in migrations()])
def test_migrate_from_each_earlier_version(pg_empty_url: str, start: int) -> None:
    with connect(pg_empty_url) as conn:
        migrate(conn, target=start)
        assert current_version(conn) == start
        rest = migrate(conn)
        assert [m.version for m in rest] == [m.version for m in migrations()
                                             if m.version > start]
        assert current_version(conn) == latest_version()


def test_two_migrators_at_once_apply_each_migration_once(pg_empty_url: str) -> None:
    results: list[int] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with connect(pg_empty_url) as conn:
                results.append(len(migrate(conn)))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sorted(results) == [0, len(migrations())]


def test_unknown_target_is_refused(pg_empty_url: str) -> None:
    with connect(pg_empty_url) as conn, pytest.raises(ValidationError, match="no migration"):
        migrate(conn, target=9999)


def test_project_comes_from_the_url() -> None:
    assert parse_store_url("postgresql://h/db").project == "default"
    url = parse_store_url("postgresql://u:secret@h:5/db?project=docs&sslmode=disable")
    assert url.project == "docs"
    assert "project" not in url.conninfo and "sslmode=disable" in url.conninfo
    assert "secret" not in url.redacted
    assert parse_store_url("postgresql://h/db?project=a", project="b").project == "b"
    with pytest.raises(ValidationError, match="project name"):
        parse_store_url("postgresql://h/db?project=../x")
    with pytest.raises(ValidationError, match="not a PostgreSQL URL"):
        parse_store_url("mysql://h/db")


def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailableError, match="cannot connect"):
        connect(f"postgresql://nobody@/db?host={tmp_path}&port=1", connect_timeout=2)


def test_wrong_database_names_it(pg_server: str) -> None:
    head, _, query = pg_server.partition("?")
    url = head.rsplit("/", 1)[0] + "/no_such_db?" + query
    with pytest.raises(StoreUnavailableError, match="no_such_db"):
        connect(url)


def _as_user(url: str, user: str) -> str:
    return url.replace("postgres:@", f"{user}:@", 1)


def test_a_user_who_may_not_create_the_schema_is_told(pg_empty_url: str) -> None:
    with connect(pg_empty_url, autocommit=True) as conn:
        conn.execute("CREATE ROLE plain_user LOGIN")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    with connect(_as_user(pg_empty_url, "plain_user")) as conn, \
            pytest.raises(StoreUnavailableError, match="database owner"):
        migrate(conn)


def test_db_migrate_command(sediment: Runner, pg_empty_url: str) -> None:
    first = sediment("db", "migrate", "--store", pg_empty_url, "--json")
    assert first.code == 0, first.err
    assert first.json()["version"] == latest_version()
    assert len(first.json()["applied"]) == len(migrations())
    again = sediment("db", "migrate", "--store", pg_empty_url)
    assert "already current" in again.out
    status = sediment("db", "status", "--store", pg_empty_url, "--json")
    assert status.json()["version"] == status.json()["latest"]


def test_db_migrate_reads_the_store_from_the_user_config(sediment: Runner, pg_empty_url: str,
                                                         tmp_path: Path) -> None:
    Path(os.environ["SEDIMENT_USER_CONFIG"]).write_text(f'store = "{pg_empty_url}"\n')
    r = sediment("db", "migrate", "--json")
    assert r.code == 0, r.err
    assert r.json()["version"] == latest_version()


def test_db_migrate_without_a_store_says_how(sediment: Runner) -> None:
    r = sediment("db", "migrate")
    assert r.code == 1
    assert "Error: no store" in r.err and "Traceback" not in r.err


def test_db_migrate_unreachable_is_one_line(sediment: Runner, tmp_path: Path) -> None:
    r = sediment("db", "migrate", "--store", f"postgresql://x@/db?host={tmp_path}&port=1")
    assert r.code == 1
    assert r.err.startswith("Error: store ") and "Traceback" not in r.err


def test_a_store_on_an_unmigrated_database_says_to_migrate(pg_empty_url: str) -> None:
    from sediment.pg import PgStore

    with pytest.raises(StoreUnavailableError, match="sediment db migrate"):
        PgStore(pg_empty_url)


def _legacy_row(conn: Any, layer: str, cid: int, owner: str, kind: str, content: str,
                *, event: bool, shared: bool = False) -> None:
    vector = None if event else "[" + ",".join(["0.125"] * 64) + "]"
    conn.execute("INSERT INTO memories (project, store, id, layer, owner, shared, is_event, "
                 "kind, content, author, confidence, created_at_ms, sources, data, embedding) "
                 "VALUES ('default', 'p', %s, %s, %s, %s, %s, %s, %s, 'mcp', 1.0, 1, %s, %s, "
                 "%s::vector)", (cid, layer, owner, shared, event, kind, content,
                                 json.dumps([cid - 1] if event else []),
                                 content if event else None, vector))


def test_0070_moves_global_memories_and_proposals_into_the_layers(pg_empty_url: str) -> None:
    """Rows an earlier Sediment kept in ``memories`` (a global memory, a proposal with its
    events, the proposal event a pull -> push had copied into chunks too) end in the
    layers, analysed for BM25, and the review flow and the memory store read them there."""
    from sediment.pg import PgStore
    from sediment.pg.database import Database
    from sediment.pg.memory import PgMemoryStore
    from sediment.review.decisions import list_proposals
    from sediment.store.events import PROPOSAL, event_content

    propose = event_content(event="propose", context_id=11, target="user",
                            from_layer="delta", copied_to_delta=False)
    with connect(pg_empty_url) as conn:
        migrate(conn, target=60)
        conn.execute("INSERT INTO projects (name) VALUES ('default')")
        conn.execute("INSERT INTO layers (project, layer, dim, element_type, metadata) VALUES "
                     "('default', 'delta', 64, 'f32', '{}')")
        conn.execute("INSERT INTO chunks (project, layer, id, kind, content, author, "
                     "confidence, created_at_ms, sources, dim) VALUES ('default', 'delta', "
                     "12, %s, %s, 'mcp', 1.0, 1, '[11]', 64)", (PROPOSAL, propose))
        _legacy_row(conn, "user", 10, "alice", "memory.fact.alice",
                    "Deploys happen on Tuesdays.", event=False, shared=True)
        _legacy_row(conn, "delta", 11, "bob", "memory.convention.bob",
                    "Release tags come from main.", event=False)
        _legacy_row(conn, "delta", 12, "bob", PROPOSAL, propose, event=True)
        _legacy_row(conn, "local", 13, "bob", "memory.fact.bob", "Bob's own note.",
                    event=False)
        conn.commit()
        migrate(conn)
        left = conn.execute("SELECT id FROM memories ORDER BY id").fetchall()
        moved = conn.execute("SELECT layer, id, lex_len FROM chunks ORDER BY id").fetchall()
        terms = conn.execute("SELECT b.term FROM posting_blocks b, sediment_block_postings("
                             "b.data) p WHERE p.id = 10 ORDER BY b.term").fetchall()
    assert left == [(13,)]
    assert [(la, i) for la, i, _ in moved] == [("user", 10), ("delta", 11), ("delta", 12)]
    assert all(n > 0 for _, i, n in moved if i != 12)  # 12 was there before
    assert [t for (t,) in terms] == ["deploy", "happen", "tuesday"]
    with PgStore(pg_empty_url) as store:
        (proposal,) = list_proposals(store)
        assert proposal.status == "pending" and proposal.chunk is not None
        assert proposal.chunk.content == "Release tags come from main."
    db = Database(pg_empty_url)
    try:
        memories = PgMemoryStore(db, dim=64)
        listed = memories.memories("bob", (Scope.GLOBAL, Scope.PROJECT))
        assert sorted((str(m.ref), m.place.value) for m in listed) == \
            [("p10", "global"), ("p11", "proposal"), ("p13", "project")]
        memories.close()
    finally:
        db.close()


def test_the_chunks_partial_indexes_are_those_the_queries_read(pg_empty_url: str) -> None:
    """A partial index whose predicate no query implies is never chosen by the planner and
    only slows every write: the queries filter on events (``meta.%``) and memories
    (``memory.%``), so those are the partial indexes the chunks table keeps."""
    with connect(pg_empty_url) as conn:
        migrate(conn)
        rows = conn.execute("SELECT indexname, indexdef FROM pg_indexes "
                            "WHERE tablename = 'chunks' AND indexdef LIKE '%WHERE%'").fetchall()
    predicates = {str(name): str(d).split("WHERE", 1)[1].strip() for name, d in rows}
    assert predicates == {"chunks_events": "(kind ~~ 'meta.%'::text)",
                          "chunks_memories": "(kind ~~ 'memory.%'::text)"}

"""The backup and restore drill of docs/team-server.md, run for real: pg_dump a team
server's database, pg_restore it into a new database, serve that, and find everything
(chunks, memories, context, tokens) there."""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path

import httpx
import psycopg

from tests.pg.team import call, mint, seed_project, team_server

TABLES = ("chunks", "layers", "lexicon", "projects", "memories", "context_rows", "tokens",
          "revisions", "schema_version")


def _bin(name: str) -> str:
    """pg_dump and pg_restore of the same major version as the test server."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver._commands import POSTGRES_BIN_PATH
    return str(Path(POSTGRES_BIN_PATH) / name)


def _counts(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])  # type: ignore[index]
                for t in TABLES}


def test_pg_dump_and_restore_drill(pg_url: str, pg_server: str, tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    alice = mint(pg_url, "alice", "writer")
    with team_server(pg_url, tmp_path) as srv, httpx.Client(base_url=srv.base,
                                                          timeout=60) as http:
        for tool, args in (
                ("save_memory", {"content": "Backups run nightly at 02:00.", "category": "fact"}),
                ("store_context", {"content": "Restore drills happen monthly.",
                                   "context_type": "task"}),
                ("agents_context_write", {"content": "The restore target is db2.",
                                          "kind": "note", "confidence": 0.8})):
            assert call(http, alice, tool, args).status_code == 200, tool
    before = _counts(pg_url)
    assert before["memories"] and before["context_rows"] and before["tokens"] == 1

    dump = tmp_path / "sediment.dump"
    subprocess.run([_bin("pg_dump"), "--format=custom", "--file", str(dump),
                    "--dbname", pg_url], check=True, capture_output=True, timeout=120)
    name = f"restored_{tmp_path.name[-20:].replace('-', '_').lower()}"
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    head, _, query = pg_url.partition("?")
    restored = f"{head.rsplit('/', 1)[0]}/{name}?{query}"
    try:
        subprocess.run([_bin("pg_restore"), "--exit-on-error", "--dbname", restored,
                        str(dump)], check=True, capture_output=True, timeout=120)
        assert _counts(restored) == before
        with team_server(restored, tmp_path) as srv, httpx.Client(base_url=srv.base,
                                                                timeout=60) as http:
            got = call(http, alice, "recall_memories", {"query": "when do backups run"})
            assert [m["content"] for m in got.json()["result"]["memories"]] == \
                ["Backups run nightly at 02:00."]
            got = call(http, alice, "get_relevant_context", {"query": "restore drills",
                                                             "min_score": 0.0})
            assert [i["content"] for i in got.json()["result"]["items"]] == \
                ["Restore drills happen monthly."]
            got = call(http, alice, "agents_search", {"query": "restore target"})
            assert "The restore target is db2." in got.text
            assert call(http, alice, "save_memory", {
                "content": "The restored server takes writes.", "category": "fact"}
                        ).status_code == 200
    finally:
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

"""``sediment memory`` and ``sediment token`` as people use them: the real command, real
files or a real PostgreSQL store (``--store``), two actors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psycopg
import pytest

from sediment.format import LayerFile
from tests.conftest import Runner
from tests.memory.conftest import BACKENDS

Where = Path | str


def _where(store: Where | None) -> list[str]:
    if store is None:
        return []
    return ["--dir", str(store)] if isinstance(store, Path) else ["--store", store]


def mem(sediment: Runner, store: Where | None, actor: str, *args: str, code: int = 0) -> dict:
    r = sediment("memory", *args, *_where(store), "--json", env={"SEDIMENT_ACTOR": actor})
    assert r.code == code, (args, r.out, r.err)
    return json.loads(r.out) if code == 0 else {"err": r.err}


@pytest.fixture(params=BACKENDS)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Where:
    """A layer directory, or the URL of a fresh PostgreSQL store."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("pg_url")
        return url
    store = tmp_path / "store"
    store.mkdir()
    return store


def test_two_actors_every_command(sediment: Runner, where: Where) -> None:
    store = where
    a_user = mem(sediment, store, "alice", "save", "Alice reviews code in the morning",
                 "--category", "pattern", "--context", "habits")["id"]
    a_proj = mem(sediment, store, "alice", "save", "The queue worker restarts hourly",
                 "--category", "fact", "--scope", "project", "--related", "docs/q.md:4")["id"]
    b_user = mem(sediment, store, "bob", "save", "Bob wants terse answers",
                 "--category", "preference")["id"]
    assert mem(sediment, store, "alice", "recall", "code review", "--limit", "5"
               )["memories"][0]["id"] == a_user
    assert [m["actor"] for m in mem(sediment, store, "bob", "recall",
                                    "terse answers, queue worker, code review"
                                    )["memories"]] == ["bob"]
    assert [m["id"] for m in mem(sediment, store, "bob", "list")["memories"]] == [b_user]
    assert mem(sediment, store, "bob", "contexts")["contexts"] == []
    for cmd in (("show", a_proj), ("update", a_proj, "--content", "x"), ("forget", a_proj)):
        err = mem(sediment, store, "bob", *cmd, code=1)["err"]
        assert "no such memory among those of actor 'bob'" in err, err
    assert mem(sediment, store, "bob", "forget-all", code=1)["err"].startswith("Error:")
    assert mem(sediment, store, "bob", "forget-all", "--yes", "--purge")["forgotten"] == 1
    alice = mem(sediment, store, "alice", "list")
    assert {m["id"] for m in alice["memories"]} == {a_user, a_proj}
    assert alice["memories"][0]["use_count"] == 1  # only alice's own recall counted
    assert alice["contexts"][0]["name"] == "habits"
    new = mem(sediment, store, "alice", "update", a_proj, "--content",
              "The queue worker restarts every 2 hours")
    shown = mem(sediment, store, "alice", "show", new["id"])
    assert [v["id"] for v in shown["versions"]] == [new["id"], a_proj]
    assert shown["related_to"] == ["docs/q.md:4"]
    assert mem(sediment, store, "alice", "forget", new["id"])["status"] == "deleted"
    assert mem(sediment, store, "alice", "purge")["purged"] == 2
    if isinstance(store, str):
        with psycopg.connect(store) as conn:
            left = conn.execute("SELECT content FROM memories").fetchall()
        assert all("queue worker" not in str(r[0]) for r in left), left
        return
    local = LayerFile.open(store / "AGENTS.local.db")
    assert all("queue worker" not in c.content for c in local.chunks())
    assert local.validate() == []
    data = Path(os.environ["SEDIMENT_DATA_DIR"])
    assert LayerFile.open(data / "actors" / "alice" / "AGENTS.user.db").validate() == []


def test_memory_text_is_printed_literally(sediment: Runner, tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    text = "Likes [bold]rich[/bold] output \x1b[31mred\x1b[0m and \x07bells"
    r = sediment("memory", "save", text, "--category", "preference", "--dir", str(store))
    assert r.code == 0, r.err
    r = sediment("memory", "list", "--dir", str(store))
    assert "[bold]rich[/bold]" in r.out and "\\x1b[31mred" in r.out and "\\x07bells" in r.out
    assert "\x1b" not in r.out and "\x07" not in r.out


def test_global_save_by_a_human_is_seen_by_everyone(sediment: Runner, where: Where) -> None:
    store = where
    g = mem(sediment, store, "admin", "save", "All timestamps are UTC", "--category",
            "convention", "--scope", "global")
    assert g["status"] == "created"
    assert mem(sediment, store, "bob", "recall", "timestamps")["memories"][0]["id"] == g["id"]
    if isinstance(store, str):
        with psycopg.connect(store) as conn:
            kinds = conn.execute("SELECT kind FROM chunks WHERE layer = 'user' AND "
                                 "kind LIKE 'memory.%%'").fetchall()
        assert [k for (k,) in kinds] == ["memory.convention.admin"]
        return
    assert [c.kind for c in LayerFile.open(store / "AGENTS.user.db").chunks()
            if not c.kind.startswith("meta.")] == ["memory.convention.admin"]


def test_tokens_create_list_revoke(sediment: Runner, tmp_path: Path) -> None:
    r = sediment("token", "create", "--actor", "alice", "--role", "reader")
    assert r.code == 0 and r.out.startswith("sdm_") and "not shown again" in r.err
    secret = r.out.strip()
    listed = sediment("token", "list", "--json").json()["tokens"]
    assert [(t["actor"], t["role"]) for t in listed] == [("alice", "reader")]
    path = Path(os.environ["SEDIMENT_USER_CONFIG"]).parent / "tokens.json"
    assert secret not in path.read_text() and secret.split("_", 2)[2] not in path.read_text()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    bad = sediment("token", "create", "--actor", "a b", "--role", "writer")
    assert bad.code == 1 and "actor 'a b' is invalid" in bad.err
    gone = sediment("token", "revoke", listed[0]["id"], "--json").json()
    assert gone["revoked"]["actor"] == "alice"
    assert sediment("token", "list", "--json").json()["tokens"] == []
    assert sediment("token", "revoke", "nope").code == 1


def test_the_configured_store_is_used_when_no_directory_is_named(
        sediment: Runner, pg_url: str, tmp_path: Path) -> None:
    Path(os.environ["SEDIMENT_USER_CONFIG"]).write_text(f'store = "{pg_url}"\n')
    saved = mem(sediment, None, "alice", "save", "Alice deploys on Fridays", "--category",
                "fact", "--scope", "project")
    assert [m["id"] for m in mem(sediment, pg_url, "alice", "list")["memories"]] == [
        saved["id"]]
    r = sediment("context", "store", "Pin the toolchain", "--type", "skill", "--json",
                 env={"SEDIMENT_ACTOR": "alice"})
    assert r.code == 0, r.err
    stats = sediment("context", "stats", "--store", pg_url, "--json",
                     env={"SEDIMENT_ACTOR": "alice"}).json()
    assert stats["by_type"] == {"skill": 1}
    both = sediment("memory", "list", "--store", pg_url, "--dir", str(tmp_path))
    assert both.code == 2 and "name two stores" in both.err, both.err

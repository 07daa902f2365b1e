"""A team lead's operations on a store (issue 30 item 3): ``db status`` gates a deploy by
its exit code, ``db migrate`` without superuser rights says the one statement a superuser
must run, ``projects list``, a misspelt ``?project=`` is an error, a libpq URL with an
empty host works, tokens list readable times and can be scoped to one project."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from sediment.pg.database import Database
from sediment.pg.tokens import PgTokenStore
from tests.conftest import Runner
from tests.pg.conftest import _with_database
from tests.pg.layers import DIM

ENV = {"SEDIMENT_EMBED_DIM": str(DIM)}


def _with_project(url: str, project: str) -> str:
    return f"{url}&project={project}"


def test_db_status_exits_3_when_behind_and_4_when_ahead(sediment: Runner, pg_url: str,
                                                        pg_empty_url: str) -> None:
    assert sediment("db", "status", "--store", pg_url).code == 0
    behind = sediment("db", "status", "--store", pg_empty_url, "--json")
    assert behind.code == 3 and behind.json()["state"] == "behind"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_version (version, name) VALUES (9999, 'future')")
    ahead = sediment("db", "status", "--store", pg_url)
    assert ahead.code == 4 and "upgrade Sediment" in ahead.out


@pytest.fixture
def owner_url(pg_server: str) -> str:
    """A database owned by a login without superuser rights."""
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS owned WITH (FORCE)")
        admin.execute("DROP ROLE IF EXISTS dbowner")
        admin.execute("CREATE ROLE dbowner LOGIN")
        admin.execute("CREATE DATABASE owned OWNER dbowner")
    host = parse_qs(urlsplit(pg_server).query)["host"][0]
    return f"postgresql://dbowner@/owned?host={host}"


def test_migrate_without_superuser_names_the_statement_to_run(
        sediment: Runner, owner_url: str, pg_server: str) -> None:
    first = sediment("db", "migrate", "--store", owner_url)
    assert first.code == 1
    assert "superuser" in first.err and "CREATE EXTENSION vector" in first.err, first.err
    with psycopg.connect(_with_database(pg_server, "owned"), autocommit=True) as su:
        su.execute("CREATE EXTENSION vector")
    again = sediment("db", "migrate", "--store", owner_url)  # as the docs say
    assert again.code == 0, again.err
    assert sediment("db", "status", "--store", owner_url).code == 0


def test_a_misspelt_project_is_an_error_listing_the_projects(sediment: Runner,
                                                             pg_url: str) -> None:
    assert sediment("projects", "list", "--store", pg_url).out.startswith("no projects")
    w = sediment("write", "--store", pg_url, "--kind", "note", "--content",
                 "Releases ship on Tuesdays.", "--confidence", "0.8", env=ENV)
    assert w.code == 0, w.err
    listed = sediment("projects", "list", "--store", pg_url, "--json")
    assert listed.json()["projects"] == ["default"]
    typo = _with_project(pg_url, "defualt")
    for args in (["search", "Tuesdays"], ["layers"], ["write", "--kind", "note", "--content",
                                                      "x", "--confidence", "0.5"],
                 ["memory", "list"], ["pull", "--dir", "."]):
        r = sediment(*args, "--store", typo, env=ENV)
        assert r.code == 1, (args, r.out, r.err)
        assert "has no project 'defualt' (projects: default)" in r.err, (args, r.err)
    assert sediment("db", "status", "--store", typo).code == 0  # db is about the database


def test_a_url_with_an_empty_host_reaches_the_socket(sediment: Runner, pg_url: str) -> None:
    parts = urlsplit(pg_url)
    user = parts.netloc.split("@")[0].split(":")[0]
    empty_host = f"postgresql://{parts.path}?{parts.query}&user={user}"
    assert empty_host.startswith("postgresql:///")
    r = sediment("db", "status", "--store", empty_host)
    assert r.code == 0, r.err


def test_tokens_list_readable_times_and_work_for_their_project_only(
        sediment: Runner, pg_url: str, tmp_path: Path) -> None:
    assert sediment("write", "--store", pg_url, "--kind", "note", "--content", "x",
                    "--confidence", "0.5", env=ENV).code == 0
    missing = sediment("token", "create", "--actor", "ci", "--project", "nope", "--store",
                       pg_url)
    assert missing.code == 1 and "has no project 'nope'" in missing.err
    made = sediment("token", "create", "--actor", "ci", "--role", "reader", "--project",
                    "default", "--store", pg_url, "--json")
    assert made.code == 0, made.err
    assert made.json()["project"] == "default"
    listed = sediment("token", "list", "--store", pg_url).out
    assert re.search(r"ci  reader  project default  created "
                     r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", listed), listed
    here, there = Database(pg_url, size=1), Database(_with_project(pg_url, "other"), size=1)
    try:
        assert PgTokenStore(here).verify(made.json()["token"]) is not None
        assert PgTokenStore(there).verify(made.json()["token"]) is None
        any_project, _ = PgTokenStore(here).create("ops", "reader")
        assert PgTokenStore(there).verify(any_project) is not None
    finally:
        here.close()
        there.close()

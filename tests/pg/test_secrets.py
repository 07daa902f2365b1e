"""A store URL's password is never printed: commands, errors, the server's banner, its 503
answers and the web page; readers see no connection details at all (issue 26 item 11)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import psycopg
import pytest

from sediment.pg.connection import parse_store_url, redact_url, scrub
from tests.conftest import SEDIMENT, run_sediment
from tests.pg.team import mint, seed_project, team_server
from tests.web.conftest import _close_clients, sign_in

__all__ = ["_close_clients"]

pytestmark = pytest.mark.timeout(300)

SECRET = "Hunter2-S3cret-pw"


def with_passwords(url: str) -> list[str]:
    """``url`` (pgserver's ``postgresql://postgres:@/NAME?host=DIR``, trust auth) with a
    password in the user part, and with one as a query parameter."""
    assert "postgres:@" in url
    return [url.replace("postgres:@", f"postgres:{SECRET}@"),
            f"{url}&password={SECRET}", f"{url}&sslpassword={SECRET}"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    r = run_sediment(*args, cwd=cwd or Path.cwd(), env=dict(os.environ), timeout=120)
    return subprocess.CompletedProcess([SEDIMENT, *args], r.code, r.out, r.err)


@pytest.mark.parametrize("url", [
    "postgresql://bob:{s}@h:5/db?password={s}&project=a",
    "postgresql://bob:{s}@h/db?sslmode=require&PassWord={s}",
    "postgresql:///db?host=/tmp&password={s}%21", "mysql://bob:{s}@h/db"])
def test_redacted_urls_hold_no_password(url: str) -> None:
    url = url.format(s=SECRET)
    shown = redact_url(url)
    assert SECRET not in shown and "***" in shown
    assert scrub(f"driver said {SECRET}! and {SECRET}%21", url).count(SECRET) == 0


def test_commands_never_print_the_password(pg_url: str, tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    for url in with_passwords(pg_url):
        for args in (["layers", "--store", url], ["layers", "--store", url, "--json"],
                     ["db", "status", "--store", url], ["db", "status", "--store", url,
                                                         "--json"],
                     ["token", "list", "--store", url],
                     ["search", "--store", url, "--embedder", "hash", "team server"],
                     ["proposals", "list", "--store", url]):
            p = run(*args, cwd=tmp_path)
            assert SECRET not in p.stdout + p.stderr, (args, p.stdout, p.stderr)
            assert p.returncode == 0, (args, p.stderr)


@pytest.mark.parametrize("url", [
    f"postgresql://bob:{SECRET}@127.0.0.1:1/x?password={SECRET}",
    f"postgresql://127.0.0.1:1/x?password={SECRET}&connect_timeout=1",
    f"mysql://bob:{SECRET}@127.0.0.1/x", f"postgresql://bob:{SECRET}@127.0.0.1:1/x?bad%zz"])
def test_errors_never_print_the_password(url: str) -> None:
    p = run("layers", "--store", url)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert SECRET not in p.stdout + p.stderr, p.stderr


def test_the_server_shows_no_password_and_readers_no_connection(pg_url: str,
                                                                tmp_path: Path) -> None:
    url = with_passwords(pg_url)[1]
    seed_project(url, tmp_path)
    tokens = {actor: mint(url, actor, role)
              for actor, role in (("rita", "reader"), ("alice", "reviewer"))}
    database = parse_store_url(pg_url).conninfo.split("?")[0].rsplit("/", 1)[1]
    with team_server(url, tmp_path) as srv:
        banner = srv.log.read_text()
        assert "serving MCP" in banner and SECRET not in banner
        reader = sign_in(srv.base, "ignored", tokens["rita"]).get("/ui/layers").text
        assert SECRET not in reader and database not in reader and "postgres" not in reader
        page = sign_in(srv.base, "ignored", tokens["alice"])
        reviewer = page.get("/ui/layers").text
        assert SECRET not in reviewer and database in reviewer
        with psycopg.connect(pg_url.replace(f"/{database}?", "/postgres?"),
                             autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {database} WITH (FORCE)")
        for path in ("/ui/layers", "/ui/queue", "/ui/memories"):
            down = page.get(path)
            assert down.status_code == 503, (path, down.text)
            assert "The store is unavailable; the server&#39;s log says why." in down.text
            assert "store store" not in down.text.lower() and database not in down.text
        for path in ("/health", "/tools/list"):
            r = httpx.get(srv.base + path, timeout=60,
                          headers={"Authorization": f"Bearer {tokens['rita']}"})
            assert r.status_code == 503, r.text
            assert SECRET not in r.text and database not in r.text
            assert r.json()["error"] == {"code": "unavailable", "message":
                                         "the store is unavailable; the server's log says why"}

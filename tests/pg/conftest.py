"""A real PostgreSQL with pgvector for the tests (pgserver), one per worker process.

The server starts once per pytest process in a temporary directory and stops at the end.
A template database is migrated once; each test gets a fresh copy of it (``CREATE DATABASE
... TEMPLATE``, a file copy, milliseconds) and its URL, dropped after the test.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sediment.pg import connect, migrate

TEMPLATE = "sediment_template"
_numbers = itertools.count(1)


def _with_database(uri: str, name: str) -> str:
    """``uri`` (pgserver's ``postgresql://postgres:@/postgres?host=DIR``) for ``name``."""
    head, _, query = uri.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{name}?{query}" if query else f"{base}/{name}"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The URL of this worker's server's ``postgres`` database; the template is ready.

    The data directory is not under pytest's temporary root: run as root, the server runs
    as another user, and every pytest session (of any checkout) resets that root to mode
    0700, which would lock the server out of its own files mid-run."""
    pgdata = tempfile.mkdtemp(prefix="sediment-pg-")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs' notes about the runtime directory
        import pgserver

        server: Any = pgserver.get_server(Path(pgdata), cleanup_mode="stop")
    uri: str = server.get_uri()
    try:
        with psycopg.connect(uri, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
            admin.execute(f"CREATE DATABASE {TEMPLATE}")
        with connect(_with_database(uri, TEMPLATE)) as conn:
            migrate(conn)
        yield uri
    finally:
        server.cleanup()
        shutil.rmtree(pgdata, ignore_errors=True)


@contextmanager
def fresh_database(pg_server: str, prefix: str = "t") -> Iterator[str]:
    """The URL of a fresh, migrated, empty database (project ``default``), dropped after."""
    name = f"{prefix}_{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    try:
        yield _with_database(pg_server, name)
    finally:
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, migrated, empty database for one test (project ``default``)."""
    with fresh_database(pg_server) as url:
        yield url


@pytest.fixture
def pg_empty_url(pg_server: str) -> Iterator[str]:
    """A fresh database with no schema at all (for migration tests)."""
    name = f"e_{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield _with_database(pg_server, name)
    finally:
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

"""A PostgreSQL with pgvector for the benchmarks: ``--store URL`` names one; without it a
private server is started with ``pgserver`` (the test dependency) in a temporary directory
and stopped at exit."""

from __future__ import annotations

import atexit
import shutil
import tempfile
import warnings
from typing import Any

import psycopg

from sediment.pg import connect, migrate


def with_database(uri: str, name: str) -> str:
    head, _, query = uri.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{name}?{query}" if query else f"{base}/{name}"


def store_url(given: str | None, database: str = "sediment_bench") -> str:
    """A migrated database: ``given``, or a fresh one on a private server."""
    if given is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                import pgserver
            except ImportError:
                raise SystemExit("no --store URL and pgserver is not installed "
                                 "(pip install pgserver, or ./run test once)") from None
        pgdata = tempfile.mkdtemp(prefix="sediment-bench-pg-")
        server: Any = pgserver.get_server(pgdata, cleanup_mode="stop")
        atexit.register(shutil.rmtree, pgdata, True)
        atexit.register(server.cleanup)
        uri: str = server.get_uri()
        with psycopg.connect(uri, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database}")
            admin.execute(f"CREATE DATABASE {database}")
        given = with_database(uri, database)
    with connect(given, statement_timeout_ms=0) as conn:
        migrate(conn)
    return given

"""A PostgreSQL with pgvector for the benchmarks: ``--store URL`` names one; without it a
private server is started with ``pgserver`` (the test dependency), in a temporary
directory removed at exit, or in ``pgdata`` kept for the next run (a 1M-row load takes
long enough to be worth keeping), and stopped at exit.

A private server is tuned for bulk loading and index builds (``TUNING``): a server a user
points us at is left as its administrator set it."""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import psycopg

from sediment.pg import connect, migrate

# Shared buffers that hold a 100k corpus's table and HNSW index (the default 128 MB makes
# every graph walk copy its pages in from the OS cache), as any server sized for its data
# has; a graph that fits in maintenance_work_mem is built in memory (pgvector 0.6 switches
# to a far slower on-disk build past it: about 2 GB for 1M x 384 at m = 16); one parallel
# worker beside the leader uses the second core; a large WAL budget keeps checkpoints out
# of the middle of a COPY.
TUNING = {
    "shared_buffers": "2GB",
    "maintenance_work_mem": "4GB",
    "max_parallel_maintenance_workers": "1",
    "max_wal_size": "16GB",
    "checkpoint_timeout": "30min",
    "synchronous_commit": "off",
}


def with_database(uri: str, name: str) -> str:
    head, _, query = uri.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{name}?{query}" if query else f"{base}/{name}"


def _server(pgdata: Path | None) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import pgserver
        except ImportError:
            raise SystemExit("no --store URL and pgserver is not installed "
                             "(pip install pgserver, or ./run test once)") from None
    if pgdata is None:
        path = tempfile.mkdtemp(prefix="sediment-bench-pg-")
        atexit.register(shutil.rmtree, path, True)
    else:
        pgdata.mkdir(parents=True, exist_ok=True)
        path = str(pgdata)
    server: Any = pgserver.get_server(path, cleanup_mode="stop")
    uri: str = server.get_uri()
    with psycopg.connect(uri, autocommit=True) as admin:
        for name, value in TUNING.items():
            admin.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        admin.execute("SELECT pg_reload_conf()")
        restart = admin.execute("SELECT pending_restart FROM pg_settings WHERE name = "
                                "'shared_buffers'").fetchone()
    if restart and restart[0]:
        server.cleanup()
        server = pgserver.get_server(path, cleanup_mode="stop")
        uri = server.get_uri()
    atexit.register(server.cleanup)
    return uri


def store_url(given: str | None, database: str = "sediment_bench",
              pgdata: Path | None = None) -> str:
    """A migrated database: ``given``, or one on a private server (a fresh one unless
    ``pgdata`` already holds it)."""
    if given is None:
        uri = _server(pgdata)
        with psycopg.connect(uri, autocommit=True) as admin:
            exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                   (database,)).fetchone()
            if exists and pgdata is None:
                admin.execute(f"DROP DATABASE {database}")
            if not exists or pgdata is None:
                admin.execute(f"CREATE DATABASE {database}")
        given = with_database(uri, database)
    with connect(given, statement_timeout_ms=0) as conn:
        t = time.perf_counter()
        applied = migrate(conn)
    if applied and pgdata is not None:  # a kept database brought up to date: say how long
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in applied)
        print(f"[{time.strftime('%H:%M:%S')}] migrated ({names}) in "
              f"{time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    return given

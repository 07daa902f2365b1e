"""The connections to one store: a :class:`psycopg_pool.ConnectionPool` shared by the
stores of a server, with Sediment's errors and transactions on top.

The pool hands out connections and replaces broken ones; a connection idle for more than
a second is checked with a cheap query before reuse (it may predate a restart of the
database), so after an outage the pool reconnects by itself on the next request. Every
wait is bounded: connecting by the connect timeout, each statement by the statement
timeout, borrowing by ``wait_timeout``. A failure is a
:class:`~sediment.errors.StoreUnavailableError` that names the store and what failed; while
the database cannot be reached that comes within a fraction of a second (the pool's own
attempt failed, and a direct one says why), not after the whole wait.

:meth:`Database.transaction` runs a block in one database transaction, optionally under
a transaction-scoped advisory lock; operations of the same thread inside the block join it
(nested blocks become savepoints), which is how a store's read-check-append sequence is
atomic across every process that writes the store.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from sediment.errors import StoreUnavailableError, ValidationError
from sediment.pg.connection import (
    CONNECT_TIMEOUT_S,
    LOST,
    STATEMENT_TIMEOUT_MS,
    StoreUrl,
    connect,
    parse_store_url,
)
from sediment.pg.migrate import require_current
from sediment.store.ids import PROJECT_IDS

Conn = psycopg.Connection[tuple[object, ...]]
DEFAULT_SIZE = 16
IDLE_CHECK_S = 1.0
"""A connection idle this long is checked before reuse."""
POLL_S = 0.05
"""How often a borrower waiting for a connection looks whether the pool failed to connect."""
BUSY = "every connection to the database stayed busy"
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)  # each failure is our error, logged once


class Database:
    """Connections to the store ``url`` names, at most ``size`` open at once."""

    def __init__(self, url: str | StoreUrl, *, size: int = DEFAULT_SIZE,
                 connect_timeout: float = CONNECT_TIMEOUT_S,
                 statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
                 wait_timeout: float = 30.0) -> None:
        self.url = url if isinstance(url, StoreUrl) else parse_store_url(url)
        self.project = self.url.project
        self.connect_timeout = connect_timeout
        self.statement_timeout_ms = statement_timeout_ms
        self.wait_timeout = wait_timeout
        self._local = threading.local()
        self._checked = False
        self._check_lock = threading.Lock()
        self._returned: weakref.WeakKeyDictionary[Conn, float] = weakref.WeakKeyDictionary()
        self._unconfigured = 0
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            self.url.conninfo, min_size=0, max_size=size, open=True, num_workers=1,
            timeout=wait_timeout, reconnect_timeout=0.01, name=f"sediment-{self.project}",
            kwargs={"autocommit": True, "connect_timeout": max(1, round(connect_timeout)),
                    "options": f"-c statement_timeout={int(statement_timeout_ms)}"},
            configure=self._configure, check=self._check)

    def _configure(self, conn: Conn) -> None:
        try:
            register_vector(conn)
        except psycopg.Error:
            self._unconfigured += 1
            raise

    def _failures(self) -> int:
        """Attempts of the pool to connect that failed (no server, no pgvector)."""
        return int(self._pool.get_stats().get("connections_errors", 0)) + self._unconfigured

    def _check(self, conn: Conn) -> None:
        if time.monotonic() - self._returned.get(conn, 0.0) >= IDLE_CHECK_S:
            conn.execute("SELECT 1")

    def _take(self) -> Conn:
        try:
            return self._pool.getconn(timeout=POLL_S)
        except PoolTimeout:
            pass
        errors = self._failures()
        if self._pool.get_stats().get("pool_size", 0) == 0:
            self._probe()  # not one connection, and none being made: the pool gave up
        deadline = time.monotonic() + self.wait_timeout - POLL_S
        while True:
            if self._failures() > errors:
                self._probe()
                errors = self._failures()
            try:
                return self._pool.getconn(timeout=POLL_S)
            except PoolTimeout:
                pass
            if time.monotonic() >= deadline:
                raise StoreUnavailableError(
                    f"store {self.url.redacted}: {BUSY} for {self.wait_timeout:g}s",
                    cause=BUSY)

    def _probe(self) -> None:
        """Connect directly: raises what stops the pool from connecting (unreachable,
        refused credentials, no database, no pgvector), with its cause."""
        with connect(self.url, connect_timeout=self.connect_timeout,
                     statement_timeout_ms=self.statement_timeout_ms, autocommit=True) as conn:
            self._first_use(conn)
            try:
                register_vector(conn)
            except psycopg.Error as exc:
                raise StoreUnavailableError(
                    f"store {self.url.redacted}: no pgvector type ({_first_line(exc)}); run "
                    "`sediment db migrate --store URL`", cause="the database has no pgvector "
                    "extension") from exc

    def _first_use(self, conn: Conn) -> None:
        if self._checked:
            return
        with self._check_lock:
            if not self._checked:
                require_current(conn)
                self._checked = True

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        """A connection for one operation (the thread's open transaction's, inside one)."""
        current: Conn | None = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        conn = self._take()
        try:
            self._first_use(conn)
            yield conn
        except psycopg.OperationalError as exc:
            raise StoreUnavailableError(f"store {self.url.redacted}: {_first_line(exc)}",
                                        cause=LOST) from exc
        except psycopg.DataError as exc:
            raise ValidationError(f"store {self.url.redacted} refused a value "
                                  f"({_first_line(exc)}); PostgreSQL text cannot hold NUL "
                                  "characters") from exc
        finally:
            # Stamped here, not in a pool ``reset`` callback: with one, the pool returns each
            # connection in its worker, after the caller moved on, so a caller's next
            # operation found none free and the pool opened another.
            self._returned[conn] = time.monotonic()
            self._pool.putconn(conn)

    @contextmanager
    def transaction(self, lock: str | None = None) -> Iterator[Conn]:
        """One transaction for the block; ``lock`` names an advisory lock held until it
        commits (a writer of the same name waits, in any process)."""
        with self.connection() as conn:
            outer = getattr(self._local, "conn", None) is None
            if outer:
                self._local.conn = conn
            try:
                with conn.transaction():
                    if lock is not None:
                        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock,))
                    yield conn
            finally:
                if outer:
                    self._local.conn = None

    def close(self) -> None:
        self._pool.close()


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def rows(conn: Conn, sql: str, params: Any = None) -> list[Any]:
    """Every row of ``sql`` (rows as plain tuples, typed loosely: the SQL says what they
    hold)."""
    return list(conn.execute(sql.encode(), params).fetchall())


def row(conn: Conn, sql: str, params: Any = None) -> Any:
    return conn.execute(sql.encode(), params).fetchone()


def bump(conn: Conn, subject: str) -> None:
    """Advance the revision of ``subject`` in the caller's transaction."""
    conn.execute("INSERT INTO revisions AS r (subject, rev) VALUES (%s, 1) "
                 "ON CONFLICT (subject) DO UPDATE SET rev = r.rev + 1", (subject,))


def revision(conn: Conn, subject: str) -> int:
    got = row(conn, "SELECT rev FROM revisions WHERE subject = %s", (subject,))
    return int(got[0]) if got else 0


def next_ids(conn: Conn, n: int) -> list[int]:
    """``n`` fresh ids from the store's one id sequence (never reused, in order), for every
    row of every project: all in the project range of written ids (``PROJECT_IDS``), where
    the sequence ends (migration 0075), so layers pulled to files never hold an id of the
    context or actor range. Past its end: an error naming the range, and the caller's
    transaction is rolled back."""
    if n <= 0:
        return []
    try:
        got = rows(conn, "SELECT nextval('chunk_ids') FROM generate_series(1, %s)", (n,))
    except pg_errors.SequenceGeneratorLimitExceeded as exc:
        raise PROJECT_IDS.exhausted(n) from exc
    ids = sorted(int(r[0]) for r in got)
    if ids[-1] > PROJECT_IDS.last:  # a sequence moved past the range before 0075 capped it
        raise PROJECT_IDS.exhausted(n)
    return ids

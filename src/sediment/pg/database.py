"""A small, self-healing pool of connections to one store, shared by the stores of a server.

Each operation borrows a connection; a connection that failed (the server restarted, the
network dropped) is closed instead of returned, and one that sat idle is checked with a
cheap query before reuse, so after an outage the pool reconnects by itself on the next
request. Every wait is bounded: connecting by the connect timeout, each statement by the
statement timeout, borrowing by ``wait_timeout``. A failure is a
:class:`~sediment.errors.StoreUnavailableError` that names the store and what failed.

:meth:`Database.transaction` runs a block in one database transaction, optionally under
a transaction-scoped advisory lock; operations of the same thread inside the block join it
(nested blocks become savepoints), which is how a store's read-check-append sequence is
atomic across every process that writes the store.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from pgvector.psycopg import register_vector

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

Conn = psycopg.Connection[tuple[object, ...]]
DEFAULT_SIZE = 16
IDLE_CHECK_S = 1.0


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
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[tuple[Conn, float]] = []
        self._lock = threading.Lock()
        self._local = threading.local()
        self._checked = False

    def _open(self) -> Conn:
        conn = connect(self.url, connect_timeout=self.connect_timeout,
                       statement_timeout_ms=self.statement_timeout_ms, autocommit=True)
        try:
            if not self._checked:
                require_current(conn)
                self._checked = True
            register_vector(conn)
        except StoreUnavailableError:
            conn.close()
            raise
        except psycopg.Error as exc:
            conn.close()
            raise StoreUnavailableError(
                f"store {self.url.redacted}: no pgvector type ({_first_line(exc)}); run "
                "`sediment db migrate --store URL`") from exc
        return conn

    def _take(self) -> Conn:
        if not self._slots.acquire(timeout=self.wait_timeout):
            raise StoreUnavailableError(
                f"store {self.url.redacted}: every connection stayed busy for "
                f"{self.wait_timeout:g}s")
        try:
            while True:
                with self._lock:
                    conn, since = self._idle.pop() if self._idle else (None, 0.0)
                if conn is None:
                    return self._open()
                if conn.closed or conn.broken:
                    continue
                if time.monotonic() - since < IDLE_CHECK_S:
                    return conn
                try:
                    conn.execute("SELECT 1")
                    return conn
                except psycopg.Error:
                    conn.close()
        except BaseException:
            self._slots.release()
            raise

    def _give(self, conn: Conn, healthy: bool) -> None:
        try:
            if healthy and not conn.closed and not conn.broken \
                    and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                with self._lock:
                    self._idle.append((conn, time.monotonic()))
            else:
                conn.close()
        finally:
            self._slots.release()

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        """A connection for one operation (the thread's open transaction's, inside one)."""
        current: Conn | None = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        conn = self._take()
        healthy = True
        try:
            yield conn
        except psycopg.OperationalError as exc:
            healthy = False
            raise StoreUnavailableError(f"store {self.url.redacted}: {_first_line(exc)}",
                                       cause=LOST) \
                from exc
        except psycopg.DataError as exc:
            raise ValidationError(f"store {self.url.redacted} refused a value "
                                  f"({_first_line(exc)}); PostgreSQL text cannot hold NUL "
                                  "characters") from exc
        finally:
            self._give(conn, healthy)

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
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()


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
    """``n`` fresh ids from the store's one id sequence (never reused, in order)."""
    if n <= 0:
        return []
    got = rows(conn, "SELECT nextval('chunk_ids') FROM generate_series(1, %s)", (n,))
    return sorted(int(r[0]) for r in got)

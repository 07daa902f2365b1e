"""Versioned schema migrations: ``migrations/NNNN_name.sql``, applied in order, once each.

``migrate`` runs every migration newer than the database's ``schema_version`` in one
transaction under a transaction-scoped advisory lock, so two migrators started together
apply each migration once (the second waits, then finds nothing to do), and a failing
migration leaves the database at its previous version. Numbers 0001-0049 hold the layered
chunk store; 0050-0059 memories, context and tokens; 0060 onwards later changes to either
(numbered after every existing one: a database's version is its newest migration, so a
new migration numbered below it would never be noticed as missing). A migration whose data
needs Sediment's own code (a chunk's BM25 terms) has a Python step beside its SQL
(:mod:`sediment.pg.backfill`), run in the same transaction right after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from sediment.errors import StoreUnavailableError, ValidationError

LOCK_KEY = 0x5ED1_3E47
"""The advisory lock every migrator takes (an arbitrary constant of this project)."""
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    """Every migration shipped with Sediment, in version order."""
    found = []
    for entry in resources.files("sediment.pg").joinpath("migrations").iterdir():
        m = _NAME.match(entry.name)
        if m:
            found.append(Migration(int(m.group(1)), m.group(2), entry.read_text("utf-8")))
    found.sort(key=lambda x: x.version)
    versions = [x.version for x in found]
    assert len(set(versions)) == len(versions), f"duplicate migration numbers: {versions}"
    return found


def latest_version() -> int:
    return migrations()[-1].version


def current_version(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    """The newest migration applied (0 for an empty database). Leaves no transaction open
    that it began."""
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT to_regclass('schema_version') IS NOT NULL")
            row = cur.fetchone()
            if not row or not row[0]:
                return 0
            cur.execute("SELECT coalesce(max(version), 0) FROM schema_version")
            row = cur.fetchone()
            return int(row[0]) if row else 0  # type: ignore[call-overload]
    finally:
        if idle and not conn.autocommit:
            conn.rollback()


def migrate(conn: psycopg.Connection[tuple[object, ...]], *, target: int | None = None
            ) -> list[Migration]:
    """Apply the migrations newer than the database's version (up to ``target``), and
    return those applied; a database already current gets none."""
    wanted = [m for m in migrations() if target is None or m.version <= target]
    if target is not None and target not in {m.version for m in migrations()} | {0}:
        raise ValidationError(f"no migration numbered {target}")
    applied: list[Migration] = []
    try:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            cur.execute("CREATE TABLE IF NOT EXISTS schema_version ("
                        "version integer PRIMARY KEY, name text NOT NULL, "
                        "applied_at timestamptz NOT NULL DEFAULT now())")
            cur.execute("SELECT version FROM schema_version")
            done = {int(r[0]) for r in cur.fetchall()}  # type: ignore[call-overload]
            for m in wanted:
                if m.version in done:
                    continue
                cur.execute(m.sql.encode())
                step = _steps().get(m.version)
                if step is not None:
                    step(cur)
                cur.execute("INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                            (m.version, m.name))
                applied.append(m)
    except (pg_errors.UndefinedFile, pg_errors.FeatureNotSupported) as exc:
        if "vector" in str(exc):
            raise StoreUnavailableError(
                "the PostgreSQL server has no pgvector extension: install pgvector 0.5 or "
                f"newer on it (https://github.com/pgvector/pgvector) ({exc})") from exc
        raise
    except pg_errors.InsufficientPrivilege as exc:
        if "extension" in str(exc) and "vector" in str(exc):
            raise StoreUnavailableError(
                "creating the pgvector extension needs a PostgreSQL superuser: have one run, "
                f"once, in database {conn.info.dbname!r}: CREATE EXTENSION vector; then run "
                "`sediment db migrate` again (as the database owner is enough from then on)",
                cause="the database has no pgvector extension") from exc
        raise StoreUnavailableError(
            f"migrating needs the right to create tables and the vector extension: {exc}; "
            "run `sediment db migrate` as the database owner") from exc
    except psycopg.OperationalError as exc:
        raise StoreUnavailableError(f"the store failed while migrating: {exc}") from exc
    return applied


def _steps() -> dict[int, Any]:
    from sediment.pg.backfill import STEPS

    return dict(STEPS)


def require_current(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Refuse to work on a database whose schema is older (or newer) than this Sediment."""
    have, want = current_version(conn), latest_version()
    if have < want:
        raise StoreUnavailableError(
            f"the store's schema is at version {have}, this Sediment needs {want}: run "
            "`sediment db migrate --store URL`")
    if have > want:
        raise StoreUnavailableError(
            f"the store's schema is at version {have}, newer than this Sediment knows "
            f"({want}): upgrade Sediment")

"""How the store's connection pool lives through a PostgreSQL crash: the latency of a
warm borrow (``SELECT 1``), how fast each request fails while the database is down (the
postmaster killed with SIGKILL), and how soon after the database is back the first
request succeeds, with no reconnect by the caller.

    python -m bench.pg_reconnect
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.team_load import Postgres
from sediment.errors import StoreUnavailableError
from sediment.pg.database import Database


def _query(db: Database) -> None:
    with db.connection() as conn:
        conn.execute("SELECT 1")


def run(borrows: int, attempts: int) -> dict[str, float | int]:
    root = Path(tempfile.mkdtemp(prefix="sediment-reconnect-"))
    pg = Postgres(root)
    try:
        db = Database(pg.database("reconnect"))
        lat = []
        for _ in range(borrows):
            t = time.perf_counter()
            _query(db)
            lat.append((time.perf_counter() - t) * 1000)
        lat.sort()
        pg.crash("sigkill")
        slowest = 0.0
        failed = 0
        for _ in range(attempts):
            t = time.perf_counter()
            try:
                _query(db)
            except StoreUnavailableError:
                failed += 1
            slowest = max(slowest, time.perf_counter() - t)
        pg.restart()
        back = time.perf_counter()
        failures_after = 0
        while True:
            try:
                _query(db)
                break
            except StoreUnavailableError:
                failures_after += 1
        first_ms = (time.perf_counter() - back) * 1000
        db.close()
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    return {"borrow_p50_ms": round(lat[len(lat) // 2], 3),
            "borrow_p99_ms": round(lat[int(len(lat) * 0.99)], 3),
            "down_failed": failed, "down_attempts": attempts,
            "down_slowest_failure_ms": round(slowest * 1000, 1),
            "first_success_after_back_ms": round(first_ms, 1),
            "failures_after_back": failures_after}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.pg_reconnect", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--borrows", type=int, default=2000)
    p.add_argument("--attempts", type=int, default=5)
    args = p.parse_args(argv)
    out = run(args.borrows, args.attempts)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

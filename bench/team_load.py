"""``python -m bench.team_load``: many writers and readers against a real team server, and
the database crashing under them.

A private PostgreSQL (``pgserver``) and a real ``sediment serve --transport http --store``
start; ``--writers`` clients each make ``--writes`` writes (``POST /tools/agents_context_write``,
one HTTP client per writer) while ``--readers`` clients search (``agents_search``) until the
writers finish. Afterwards the database is read directly: one chunk per acknowledged write,
ids unique (a failed write is retried, as a client would, so every write is eventually
acknowledged). With ``--crash-after S`` the PostgreSQL server is killed (SIGKILL to the postmaster;
``--kill immediate`` for ``pg_ctl stop -m immediate``) S seconds into the load
(or, with ``--crash-after-writes N``, once N writes were acknowledged) and started again
``--down`` seconds later: requests during the outage must fail with a
clear error within the configured timeouts (never hang), the server must reconnect by
itself, and every acknowledged write must be there afterwards. A write whose connection
broke after its commit reached the disk is stored although the client saw an error; its
retry stores it again (``duplicates``: an at-least-once client without idempotency keys).

    python -m bench.team_load --writers 8 --writes 500 --readers 2 [--json out.json]
    python -m bench.team_load --writers 8 --writes 200 --readers 2 --crash-after 5 --down 5

``tests/pg/test_load.py`` runs a smaller version of both.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

from sediment.pg import connect, migrate
from sediment.pg.database import Database
from sediment.pg.tokens import PgTokenStore

SEDIMENT = str(Path(sys.executable).parent / "sediment")
RETRY_S = 120.0
"""A write that failed is sent again (a client's retry) for this long."""
CLIENT_TIMEOUT_S = 45.0
"""Longer than the server's statement timeout (30 s) plus its connect timeout (5 s): a
request that runs into this timeout hung."""


class Postgres:
    """A private PostgreSQL server (pgserver) in ``root`` that can crash and restart."""

    def __init__(self, root: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

        self.pgdata = root / "pgdata"
        self.pgdata.mkdir(parents=True)
        self.server: Any = pgserver.get_server(self.pgdata, cleanup_mode="stop")
        self.uri: str = self.server.get_uri()
        self._log_mark = 0

    def database(self, name: str) -> str:
        with psycopg.connect(self.uri, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        head, _, query = self.uri.partition("?")
        url = f"{head.rsplit('/', 1)[0]}/{name}?{query}"
        with connect(url, statement_timeout_ms=0) as conn:
            migrate(conn)
        return url

    def crash(self, how: str = "sigkill") -> None:
        """Kill the server: ``sigkill`` sends SIGKILL to the postmaster (what the OOM
        killer or ``kill -9`` does: no shutdown, no checkpoint, backends orphaned), then
        waits until it and every process it had started are gone, as they go once they
        notice their postmaster died; ``immediate`` is ``pg_ctl stop -m immediate``
        (SIGQUIT: the server stops its backends itself, also without a checkpoint)."""
        self._log_mark = self.log_size()
        if how == "immediate":
            from pgserver._commands import pg_ctl

            pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.pgdata,
                   user=self.server.system_user)
            return
        pid = int((self.pgdata / "postmaster.pid").read_text().split()[0])
        family = [pid, *_children(pid)]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + KILL_WAIT_S
        while left := [p for p in family if _alive(p)]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL processes {left} still run {KILL_WAIT_S:.0f} s "
                                   f"after their postmaster {pid} was killed")
            time.sleep(0.05)
        # A killed postmaster nobody has reaped yet still answers kill(pid, 0), and both
        # pgserver and PostgreSQL's own lock-file check would take it for a running server.
        deadline = time.monotonic() + KILL_WAIT_S
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if Path(f"/proc/{pid}").exists():
            (self.pgdata / "postmaster.pid").unlink()

    def restart(self) -> None:
        with self.server._lock:
            self.server.ensure_postgres_running()

    def log_size(self) -> int:
        log = self.pgdata / "log"
        return log.stat().st_size if log.exists() else 0

    def recovered(self) -> bool:
        """Whether the server's log since the last crash says it ran crash recovery."""
        with open(self.pgdata / "log", "rb") as f:
            f.seek(self._log_mark)
            return b"not properly shut down; automatic recovery in progress" in f.read()

    def stop(self) -> None:
        self.server.cleanup()


KILL_WAIT_S = 30.0
"""How long a killed server's processes may take to go."""


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped, is not)."""
    try:
        return (Path(f"/proc/{pid}") / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serve(url: str, cwd: Path) -> Iterator[str]:
    """A real ``sediment serve --transport http --store url``; yields its base URL."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "SEDIMENT_TOKEN"}
    # The server logs each failure's cause: into a file, since a pipe nobody reads fills
    # up and blocks the server mid-request (which the load would count as hangs).
    log_path = cwd / f"server-{port}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([SEDIMENT, "serve", "--transport", "http", "--host",
                                 "127.0.0.1", "--port", str(port), "--store", url,
                                 "--embedder", "hash", "--no-warm-up"], cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                err = log_path.read_text(errors="replace")[-4000:]
                raise RuntimeError(f"server exited with {proc.returncode}: {err}")
            try:
                httpx.get(f"{base}/health", timeout=1.0)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not start within 60 s") from None
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@dataclass
class Failure:
    at_s: float
    took_s: float
    status: int
    message: str


@dataclass
class LoadResult:
    writers: int
    writes: int
    readers: int
    seconds: float = 0.0
    acked: list[int] = field(default_factory=list)
    write_failures: list[Failure] = field(default_factory=list)
    reads: int = 0
    read_failures: list[Failure] = field(default_factory=list)
    hangs: int = 0
    stored: int = 0
    stored_unique: int = 0
    missing_acked: int = 0
    duplicates: int = 0
    distinct_writes: int = 0
    crashed_at_s: float | None = None
    kill: str | None = None
    gone_after_s: float | None = None
    """From the kill until the server's last process was gone."""
    crash_recovery: bool | None = None
    """Whether the restarted server's log says it recovered from a crash."""
    restarted_at_s: float | None = None
    first_success_after_restart_s: float | None = None
    failures_after_recovery: int = 0
    acked_at: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        out = asdict(self)
        out["acked"] = len(self.acked)
        del out["acked_at"]
        out["write_failures"] = len(self.write_failures)
        out["read_failures"] = len(self.read_failures)
        fails = self.write_failures + self.read_failures
        out["slowest_failure_s"] = round(max((f.took_s for f in fails), default=0.0), 3)
        out["failure_kinds"] = sorted({f"{f.status}: {f.message[:160]}" for f in fails})[:8]
        out["writes_per_s"] = round(len(self.acked) / self.seconds, 1) if self.seconds else 0
        return out


def _seed(url: str, cwd: Path) -> None:
    subprocess.run([SEDIMENT, "write", "--store", url, "--embedder", "hash", "--kind", "note",
                    "--content", "The team server keeps every project in PostgreSQL.",
                    "--confidence", "0.9"], cwd=cwd, capture_output=True, text=True,
                   timeout=120, check=True)


def run_load(url: str, cwd: Path, *, writers: int, writes: int, readers: int,
             pg: Postgres | None = None, crash_after: float | None = None,
             crash_after_writes: int | None = None, down: float = 5.0,
             kill: str = "sigkill") -> LoadResult:
    """Run the load (and the crash) against a fresh server over ``url``.

    The crash comes ``crash_after`` seconds into the load or once ``crash_after_writes``
    writes were acknowledged, whichever is given; the second does not depend on how fast
    the machine is, which is what a test needs (the writers still have work left after the
    restart, because each write is retried until it is acknowledged). The restart time is
    taken when the restart begins: a write may be acknowledged before ``pg_ctl`` returns.
    """
    _seed(url, cwd)
    db = Database(url, size=1)
    try:
        tokens = PgTokenStore(db)
        writer_tokens = [tokens.create(f"writer{i}", "writer")[0] for i in range(writers)]
        reader_tokens = [tokens.create(f"reader{i}", "reader")[0] for i in range(readers)]
    finally:
        db.close()
    res = LoadResult(writers, writes, readers)
    lock = threading.Lock()
    done = threading.Event()
    start = 0.0

    def post(http: httpx.Client, token: str, tool: str, args: dict[str, Any]
             ) -> tuple[httpx.Response | None, Failure | None]:
        t0 = time.monotonic()
        try:
            r = http.post(f"/tools/{tool}", json=args,
                          headers={"Authorization": f"Bearer {token}"})
        except httpx.TimeoutException as exc:
            with lock:
                res.hangs += 1
            return None, Failure(t0 - start, time.monotonic() - t0, 0, f"hang: {exc!r}")
        except httpx.HTTPError as exc:
            return None, Failure(t0 - start, time.monotonic() - t0, 0, repr(exc))
        if r.status_code != 200:
            try:
                message = str(r.json()["error"]["message"])
            except (ValueError, KeyError, TypeError):
                message = r.text[:200]
            return r, Failure(t0 - start, time.monotonic() - t0, r.status_code, message)
        return r, None

    with serve(url, cwd) as base:
        start = time.monotonic()

        def writer(w: int) -> None:
            with httpx.Client(base_url=base, timeout=CLIENT_TIMEOUT_S) as http:
                for j in range(writes):
                    deadline = time.monotonic() + RETRY_S
                    while True:
                        r, fail = post(http, writer_tokens[w], "agents_context_write", {
                            "content": f"load writer {w} write {j}: the deploy of service "
                                       f"{j % 17} needs migration {j % 5}", "kind": "note",
                            "confidence": 0.5})
                        with lock:
                            if fail is None and r is not None:
                                res.acked.append(int(r.json()["result"]["id"]))
                                res.acked_at.append(time.monotonic() - start)
                            elif fail is not None:
                                res.write_failures.append(fail)
                        if fail is None or time.monotonic() > deadline:
                            break
                        time.sleep(0.25)

        def reader(i: int) -> None:
            with httpx.Client(base_url=base, timeout=CLIENT_TIMEOUT_S) as http:
                n = 0
                while not done.is_set():
                    _, fail = post(http, reader_tokens[i], "agents_search",
                                   {"query": f"deploy of service {n % 17}", "k": 5})
                    n += 1
                    with lock:
                        res.reads += 1
                        if fail is not None:
                            res.read_failures.append(fail)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
        threads += [threading.Thread(target=reader, args=(i,)) for i in range(readers)]
        for t in threads:
            t.start()
        if pg is not None and (crash_after is not None or crash_after_writes is not None):
            if crash_after_writes is not None:
                while len(res.acked) < crash_after_writes and \
                        any(t.is_alive() for t in threads[:writers]):
                    time.sleep(0.01)
            else:
                time.sleep(crash_after or 0.0)
            res.crashed_at_s = time.monotonic() - start
            res.kill = kill
            pg.crash(kill)
            res.gone_after_s = round(time.monotonic() - start - res.crashed_at_s, 3)
            time.sleep(down)
            res.restarted_at_s = time.monotonic() - start
            pg.restart()
            res.crash_recovery = pg.recovered()
        for t in threads[:writers]:
            t.join()
        done.set()
        for t in threads[writers:]:
            t.join()
        res.seconds = time.monotonic() - start
    _check(url, res)
    return res


def _check(url: str, res: LoadResult) -> None:
    with connect(url) as conn:
        rows = conn.execute("SELECT id, content FROM chunks WHERE layer = 'local' "
                            "AND kind = 'note' AND content LIKE 'load writer %'").fetchall()
    ids = [int(r[0]) for r in rows]  # type: ignore[call-overload]
    res.duplicates = len(rows) - len({r[1] for r in rows})
    res.distinct_writes = len({r[1] for r in rows})
    res.stored, res.stored_unique = len(ids), len(set(ids))
    res.missing_acked = len(set(res.acked) - set(ids))
    if res.restarted_at_s is not None:
        back = [t for t in res.acked_at if t >= res.restarted_at_s]
        first = min(back, default=None)
        res.first_success_after_restart_s = None if first is None else \
            round(first - res.restarted_at_s, 3)
        res.failures_after_recovery = sum(
            1 for f in res.write_failures + res.read_failures
            if first is not None and f.at_s > first)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.team_load", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--writes", type=int, default=500)
    p.add_argument("--readers", type=int, default=2)
    p.add_argument("--crash-after", type=float, default=None,
                   help="Crash PostgreSQL this many seconds into the load.")
    p.add_argument("--crash-after-writes", type=int, default=None,
                   help="Crash PostgreSQL once this many writes were acknowledged.")
    p.add_argument("--down", type=float, default=5.0, help="Seconds it stays down.")
    p.add_argument("--kill", choices=("sigkill", "immediate"), default="sigkill",
                   help="How to crash it: SIGKILL to the postmaster (default), or pg_ctl "
                        "stop -m immediate.")
    p.add_argument("--json", type=Path, default=None, help="Also write the result here.")
    args = p.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="sediment-team-load-"))
    pg = Postgres(root)
    try:
        url = pg.database("team_load")
        res = run_load(url, root, writers=args.writers, writes=args.writes,
                       readers=args.readers, pg=pg, crash_after=args.crash_after,
                       crash_after_writes=args.crash_after_writes, down=args.down,
                       kill=args.kill)
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    out = res.summary()
    out["command"] = "python -m bench.team_load " + " ".join(argv or sys.argv[1:])
    text = json.dumps(out, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

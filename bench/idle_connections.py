"""``python -m bench.idle_connections``: idle and slow connections against a real server.

Issue 26 item 3: about 1,000 idle TCP connections took ``sediment serve --transport http``
down at ``ulimit -n 1024``. This starts the real server in a subprocess with that file
limit (``resource.setrlimit`` in the child), then, to 127.0.0.1 only, holds ``--idle``
connections that send nothing and ``--slow`` requests whose body trickles a byte a
second (the sign-in form, which reads its body before any token is checked), each
reopened when the server closes it (at most ``--max-connects`` connections in all, for
``--seconds``). Meanwhile one client searches with a bearer token, one request
after another on a kept-alive connection. It reports whether the server stayed up, the
searches that answered, and their p50 / p99 against the same searches on a quiet server.

    python -m bench.idle_connections --idle 2000 --slow 200 --seconds 60 --nofile 1024
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

from bench.machine import describe
from bench.timing import Stats
from sediment.embed import HashEmbedder
from sediment.format import Chunk, encode_layer

TOKEN = "bench-token-0123456789abcdef"
HOST = "127.0.0.1"
TEXTS = ["Layer precedence is local over user over delta over base.",
         "Requests to /billing MUST include the X-Account header.",
         "The deploy job pushes containers to staging every night."]


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.idle_connections", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--idle", type=int, default=2000, help="idle connections held open")
    p.add_argument("--slow", type=int, default=200, help="slow bodies held open")
    p.add_argument("--seconds", type=float, default=60.0, help="how long the attack lasts")
    p.add_argument("--quiet-searches", type=int, default=100,
                   help="searches before the attack (the baseline)")
    p.add_argument("--nofile", type=int, default=1024, help="the server's file limit")
    p.add_argument("--max-connects", type=int, default=100_000,
                   help="connections opened in all, at most")
    p.add_argument("--json", type=Path, default=None, help="also write the result here")
    return p.parse_args(argv)


def _store(directory: Path) -> None:
    emb = HashEmbedder()
    chunks = [Chunk(i, "canonical", t, "human", 1.0, 0, (f"docs/{i}.md:1",))
              for i, t in enumerate(TEXTS, 1)]
    md = {"v": 1, "embedding_profile": emb.profile.to_dict()}
    (directory / "AGENTS.db").write_bytes(
        encode_layer(chunks, emb.embed([c.content for c in chunks]), metadata=md))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@dataclass
class Attack:
    """What the attacking side did and saw."""

    opened: int = 0
    refused: int = 0
    closed_by_server: int = 0
    slow_answers: dict[str, int] = field(default_factory=dict)
    peak_open: int = 0
    open_now: int = 0


async def _hold(port: int, slow: bool, until: float, attack: Attack, budget: list[int]) -> None:
    """One attacker slot: connect, send nothing (or a body a byte a second), wait for the
    server to close, reconnect, until time or the connection budget runs out."""
    while time.monotonic() < until and budget[0] > 0:
        budget[0] -= 1
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), 10)
        except (OSError, TimeoutError):
            attack.refused += 1
            await asyncio.sleep(0.5)
            continue
        attack.opened += 1
        attack.open_now += 1
        attack.peak_open = max(attack.peak_open, attack.open_now)
        try:
            if slow:
                writer.write(b"POST /ui/login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             b"Content-Type: application/x-www-form-urlencoded\r\n"
                             b"Content-Length: 100000\r\n\r\nreviewer=")
            got = b""
            while time.monotonic() < until:
                try:
                    piece = await asyncio.wait_for(reader.read(4096), 1.0)
                except TimeoutError:
                    if slow:
                        writer.write(b"x")
                    continue
                if not piece:
                    attack.closed_by_server += 1
                    if slow:
                        status = got[9:12].decode("latin-1") or "closed"
                        attack.slow_answers[status] = attack.slow_answers.get(status, 0) + 1
                    break
                got += piece
        except OSError:
            attack.closed_by_server += 1
        finally:
            attack.open_now -= 1
            writer.close()


def _attack(port: int, idle: int, slow: int, seconds: float, max_connects: int,
            attack: Attack) -> None:
    async def main() -> None:
        until = time.monotonic() + seconds
        budget = [max_connects]
        slots = [_hold(port, False, until, attack, budget) for _ in range(idle)]
        slots += [_hold(port, True, until, attack, budget) for _ in range(slow)]
        await asyncio.gather(*slots)

    asyncio.run(main())


def _searches(client: httpx.Client, until: float | None, count: int | None
              ) -> tuple[list[float], int]:
    samples: list[float] = []
    failed = 0
    n = 0
    while (count is None or n < count) and (until is None or time.monotonic() < until):
        n += 1
        t = time.perf_counter()
        try:
            r = client.post("/tools/agents_search", json={"query": "layer precedence"})
            ok = r.status_code == 200
        except httpx.HTTPError:
            ok = False
        if ok:
            samples.append(time.perf_counter() - t)
        else:
            failed += 1
    return samples, failed


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    need = opts.idle + opts.slow + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            print(f"this process needs {need} open files; the hard limit is {hard}",
                  file=sys.stderr)
            return 2
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    machine = describe("python -m bench.idle_connections " + " ".join(argv or sys.argv[1:]))
    with tempfile.TemporaryDirectory(prefix="sediment-idle-") as tmp:
        store = Path(tmp)
        _store(store)
        port = _free_port()

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (opts.nofile, opts.nofile))

        env = {**os.environ, "SEDIMENT_TOKEN": TOKEN, "SEDIMENT_USER_CONFIG":
               str(store / "config.toml"), "SEDIMENT_CACHE_DIR": str(store / "cache")}
        errlog = (store / "stderr.txt").open("wb")
        proc = subprocess.Popen([sys.executable, "-m", "sediment", "serve", "--transport",
                                 "http", "--port", str(port), "--dir", str(store),
                                 "--embedder", "hash", "--no-warm-up"],
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=errlog, preexec_fn=limit)
        base = f"http://{HOST}:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    print("the server did not start", file=sys.stderr)
                    return 1
                try:
                    httpx.get(f"{base}/health", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            with httpx.Client(base_url=base, timeout=30,
                              headers={"Authorization": f"Bearer {TOKEN}"}) as client:
                quiet, quiet_failed = _searches(client, None, opts.quiet_searches)
                attack = Attack()
                attacker = threading.Thread(target=_attack, daemon=True, args=(
                    port, opts.idle, opts.slow, opts.seconds, opts.max_connects, attack))
                attacker.start()
                time.sleep(min(5.0, opts.seconds / 4))  # let the connections pile up
                loaded, loaded_failed = _searches(
                    client, time.monotonic() + opts.seconds - min(5.0, opts.seconds / 4) - 1,
                    None)
                attacker.join(opts.seconds + 30)
                try:
                    answers = client.get("/health", timeout=10).status_code == 200
                except httpx.HTTPError:
                    answers = False
            alive = proc.poll() is None
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)
            errlog.close()
        stderr = (store / "stderr.txt").read_text(errors="replace")
    result = {
        "machine": asdict(machine),
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(opts).items()},
        "server_alive_after_attack": alive,
        "server_answers_after_attack": answers,
        "server_exit_code": proc.returncode,
        "attack": asdict(attack),
        "quiet": _summary(quiet, quiet_failed),
        "under_attack": _summary(loaded, loaded_failed),
        "server_stderr": stderr[-2000:],
    }
    _print(result)
    if opts.json:
        opts.json.parent.mkdir(parents=True, exist_ok=True)
        opts.json.write_text(json.dumps(result, indent=2))
    return 0 if alive and answers and not loaded_failed else 1


def _summary(samples: list[float], failed: int) -> dict[str, float | int]:
    stats = Stats(tuple(samples))
    return {"answered": len(samples), "failed": failed,
            "p50_ms": round(stats.p50 * 1000, 1) if samples else -1,
            "p99_ms": round(stats.p99 * 1000, 1) if samples else -1}


def _print(result: dict[str, object]) -> None:
    m = result["machine"]
    a = result["attack"]
    assert isinstance(m, dict) and isinstance(a, dict)
    print(f"{m['date']}  {m['cpu']}  {m['usable_cores']} cores  "
          f"{m['ram_bytes'] / 2**30:.0f} GiB  load at start {m['load_start']}")
    print(f"server process alive after the attack: {result['server_alive_after_attack']}, "
          f"answering: {result['server_answers_after_attack']} "
          f"(exit code at SIGTERM: {result['server_exit_code']})")
    print(f"attack: {a['opened']} connections opened ({a['refused']} refused), at most "
          f"{a['peak_open']} open at once, {a['closed_by_server']} closed by the server; "
          f"slow bodies answered {a['slow_answers']}")
    print("| authenticated search | answered | failed | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|")
    for name in ("quiet", "under_attack"):
        s = result[name]
        assert isinstance(s, dict)
        print(f"| {name.replace('_', ' ')} | {s['answered']} | {s['failed']} | "
              f"{s['p50_ms']} | {s['p99_ms']} |")


if __name__ == "__main__":
    raise SystemExit(main())

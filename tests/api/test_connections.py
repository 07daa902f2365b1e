"""Idle, slow and too many connections cannot take the HTTP server down (issue 26 item 3).

The end-to-end test runs the real ``sediment serve`` with a low file limit; the others run
the same uvicorn server and protocol (``sediment.server.serving``) with short deadlines
around a tiny app, so that a deadline can pass within the test.
"""

from __future__ import annotations

import asyncio
import errno
import os
import resource
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from sediment.server.serving import Limits, connection_cap, http_server, loop_errors, run
from tests.mcp.conftest import SEDIMENT, TOKEN, free_port, make_store, stop

WAIT = 60.0
"""The longest any wait below may take (a bound, not a timing being checked)."""


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    return s


def closed_by_server(s: socket.socket) -> bytes | None:
    """What the server sent before closing ``s``, or None if it is still open."""
    s.setblocking(False)
    got = b""
    try:
        while True:
            piece = s.recv(4096)
            if not piece:
                return got
            got += piece
    except BlockingIOError:
        return None
    except OSError:
        return got


def wait_closed(socks: list[socket.socket]) -> list[bytes]:
    deadline = time.monotonic() + WAIT
    answers: dict[int, bytes] = {}
    while len(answers) < len(socks) and time.monotonic() < deadline:
        for i, s in enumerate(socks):
            if i not in answers:
                got = closed_by_server(s)
                if got is not None:
                    answers[i] = got
        time.sleep(0.2)
    assert len(answers) == len(socks), f"{len(socks) - len(answers)} still open"
    return [answers[i] for i in range(len(socks))]


def test_the_server_survives_idle_connections_past_its_file_limit(tmp_path: Path) -> None:
    """300 idle connections and 20 slow bodies against ``ulimit -n 256``: before, the
    server exited (EMFILE, then a failure while logging it); now it keeps answering an
    authenticated client and closes the idle connections itself."""
    store = make_store(tmp_path / "store")
    port = free_port()

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    env = {**os.environ, "SEDIMENT_TOKEN": TOKEN}
    proc = subprocess.Popen([SEDIMENT, "serve", "--transport", "http", "--port", str(port),
                             "--dir", str(store), "--embedder", "hash", "--no-warm-up"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, preexec_fn=low_limit)
    base = f"http://127.0.0.1:{port}"
    socks: list[socket.socket] = []
    try:
        deadline = time.monotonic() + WAIT
        while True:
            assert proc.poll() is None and time.monotonic() < deadline
            try:
                httpx.get(f"{base}/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        for i in range(320):
            s = connect(port)
            if i % 16 == 0:  # a slow body: whole headers, then one byte of 1,000
                s.sendall(b"POST /tools/agents_search HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
            socks.append(s)
        with httpx.Client(base_url=base, timeout=WAIT,
                          headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            for _ in range(5):
                r = client.post("/tools/agents_search", json={"query": "layer precedence"})
                assert r.status_code == 200, r.text
        assert proc.poll() is None
        wait_closed(socks)
        assert proc.poll() is None
        r = httpx.get(f"{base}/health", timeout=WAIT,
                      headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200
    finally:
        for s in socks:
            s.close()
        stop(proc)
    assert proc.returncode in (0, -15)


async def _echo(request: Request) -> PlainTextResponse:
    return PlainTextResponse(f"got {len(await request.body())} bytes")


@pytest.fixture
def small_server() -> Iterator[int]:
    """The guarded server, deadlines of half a second, at most 8 connections."""
    app = Starlette(routes=[Route("/", _echo, methods=["GET", "POST"])])
    server = http_server(app, Limits(header_seconds=0.5, body_seconds=0.5,
                                     keep_alive_seconds=1, max_connections=8))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    thread = threading.Thread(target=run, args=(server, sock), daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT
    while not server.started:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(WAIT)
    sock.close()


def test_partial_headers_and_slow_bodies_get_408(small_server: int) -> None:
    idle = connect(small_server)
    partial = connect(small_server)
    partial.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    body = connect(small_server)
    body.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n12")
    try:
        got = wait_closed([idle, partial, body])
    finally:
        for s in (idle, partial, body):
            s.close()
    assert got[0] == b""
    assert got[1].startswith(b"HTTP/1.1 408 ") and got[2].startswith(b"HTTP/1.1 408 ")


def test_a_trickled_request_is_cut_off_at_its_deadline(small_server: int) -> None:
    """The deadline is a total: a byte every tenth of a second does not extend it."""
    s = connect(small_server)
    s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    try:
        for _ in range(int(WAIT * 10)):
            s.sendall(b"X")
            time.sleep(0.1)
    except OSError:
        pass
    assert closed_by_server(s) is not None
    s.close()


def test_new_connections_push_out_the_oldest_idle_ones(small_server: int) -> None:
    """Over the cap the oldest connection that sent nothing is closed, so a client that
    sends its request at once is served however many idle ones came first."""
    idle = [connect(small_server) for _ in range(8)]
    time.sleep(0.1)
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", small_server), timeout=WAIT) as s:
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                      b"Connection: close\r\n\r\nabc")
            answer = b""
            while piece := s.recv(4096):
                answer += piece
        assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"got 3 bytes")
    assert sum(closed_by_server(s) is not None for s in idle) >= 1
    for s in idle:
        s.close()


def test_connections_kept_alive_are_served_and_then_closed(small_server: int) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{small_server}", timeout=WAIT) as c:
        assert [c.post("/", content=b"x" * n).text for n in (1, 2)] == \
            ["got 1 bytes", "got 2 bytes"]


def test_the_cap_leaves_files_free() -> None:
    assert connection_cap(1024) == 768
    assert connection_cap(256) == 192
    assert connection_cap(100) == 36
    assert connection_cap(1_000_000) == 4096
    assert connection_cap(10) == 8


def test_accept_failures_are_reported_without_raising(capfd: pytest.CaptureFixture[str]) -> None:
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(loop_errors)
    try:
        for _ in range(3):
            loop.call_exception_handler({"message": "socket.accept() out of system resource",
                                         "exception": OSError(errno.EMFILE, "Too many")})

        def broken(*_: object) -> None:
            raise OSError(errno.EMFILE, "the log handler cannot open a file")

        loop.default_exception_handler = broken  # type: ignore[method-assign]
        loop_errors(loop, {"message": "a callback failed", "exception": ValueError("x")})
    finally:
        loop.close()
    err = capfd.readouterr().err
    assert err.count("cannot accept a connection") <= 1
    assert "a callback failed (ValueError)" in err

"""Running the HTTP app so that idle, slow or too many clients cannot take the server down.

uvicorn alone keeps a connection that has sent nothing, or half its headers, or a body one
byte a minute, open forever; about 1,000 of them exhaust a common file limit of 1,024, and
when ``accept`` then fails with EMFILE, logging the error opened a file, failed again and
the failure escaped the event loop: the process exited. What is added here, and why:

- **Read deadlines** (:class:`Limits`): a request's headers must arrive within
  ``header_seconds`` of the connection opening (or of the previous response), and its body
  within ``body_seconds`` of the headers. Deadlines are totals, not idle timers, so a
  client trickling a byte at a time gains nothing. A request cut off mid-way gets 408.
- **A connection cap below the file limit** (``max_connections``: the soft
  ``RLIMIT_NOFILE`` less a quarter kept for the store's own files, at most 4,096). A new
  connection over the cap closes the oldest one that has not yet sent a whole request
  (first those that never sent one, then kept-alive idle ones), so idle connections can
  never lock out a client that sends its request promptly; only when every connection is
  busy with a request is the new one refused (503). The listen backlog, which is also how
  many connections asyncio accepts in one go before any is looked at, is kept within the
  files the cap leaves free.
- **An event loop error handler that never raises** and never opens a file: accept
  failures (EMFILE, ENFILE, ENOBUFS, ENOMEM) are reported at most every 10 seconds on
  stderr, and asyncio retries the accept a second later.

uvicorn's own settings cover the rest: ``timeout_keep_alive`` closes idle kept-alive
connections, ``h11_max_incomplete_event_size`` bounds the header bytes, ``backlog`` the
kernel queue. Its ``limit_concurrency`` is not used as the connection limit: it answers
503 to every new request once enough connections are *open*, idle or not, which is the
outage an attacker wants.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from sediment.server.lifecycle import run_async

_ACCEPT_ERRORS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


def _raw(status: str, text: str) -> bytes:
    """A whole response written straight to a connection h11 cannot answer on."""
    body = text.encode()
    return (f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode() + body


_408 = _raw("408 Request Timeout", "the request was not received in time\n")
_503 = _raw("503 Service Unavailable", "too many open connections; retry\n")


def file_limit() -> int | None:
    """The soft limit on open files, None when the platform has none to read."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def connection_cap(nofile: int | None = None, ceiling: int = 4096) -> int:
    """How many connections to keep open with ``nofile`` files allowed: a quarter (at least
    64) stays free for layer files, the model, the token file and the store's database."""
    nofile = file_limit() if nofile is None else nofile
    if nofile is None:
        return ceiling
    return max(8, min(ceiling, nofile - max(64, nofile // 4)))


@dataclass(frozen=True, slots=True)
class Limits:
    header_seconds: float = 10.0
    body_seconds: float = 30.0
    keep_alive_seconds: int = 5
    max_header_bytes: int = 16 * 1024
    max_connections: int | None = None
    """None: :func:`connection_cap` of the process's file limit."""


def guarded_protocol(limits: Limits) -> type[H11Protocol]:
    """uvicorn's h11 protocol with :class:`Limits`' deadlines and cap, for one server."""
    cap = limits.max_connections or connection_cap()
    fresh: OrderedDict[Guarded, None] = OrderedDict()
    """Connections that have not sent a whole request yet, oldest first."""
    idle: OrderedDict[Guarded, None] = OrderedDict()
    """Kept-alive connections waiting for their next request, oldest first."""

    class Guarded(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _served = False
        _reading_body = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > cap and not self._evict_one():
                transport.write(_503)
                transport.close()
                return
            self._await_request()

        def connection_lost(self, exc: Exception | None) -> None:
            super().connection_lost(exc)
            self._stop_waiting()
            self._cancel()

        def handle_events(self) -> None:
            super().handle_events()
            state = self.conn.their_state
            if state is h11.IDLE:
                return
            self._stop_waiting()
            if state is h11.SEND_BODY:
                if not self._reading_body:
                    self._reading_body = True
                    self._arm(limits.body_seconds)
            else:
                self._cancel()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._served = True
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._await_request()

        def _await_request(self) -> None:
            self._reading_body = False
            self._stop_waiting()
            (idle if self._served else fresh)[self] = None
            self._arm(limits.header_seconds)

        def _stop_waiting(self) -> None:
            fresh.pop(self, None)
            idle.pop(self, None)

        def _arm(self, seconds: float) -> None:
            self._cancel()
            self._timer = self.loop.call_later(seconds, self._expired)

        def _cancel(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self) -> None:
            self._timer = None
            self._stop_waiting()
            if self.transport.is_closing():
                return
            state = self.conn.their_state
            if state is h11.SEND_BODY:
                answer = self.cycle is None or not self.cycle.response_started
            else:
                answer = state is h11.IDLE and bool(self.conn.trailing_data[0])
            if answer:
                self.transport.write(_408)
            self.transport.close()

        def _evict_one(self) -> bool:
            for queue in (fresh, idle):
                for victim in queue:
                    if victim is not self:
                        victim._stop_waiting()
                        victim._cancel()
                        victim.transport.close()
                        return True
            return False

    return Guarded


_last_report = [0.0]


def _say(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, text.encode("utf-8", "replace"))


def loop_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's error handler: never raises, never needs a new file for an accept
    failure (asyncio pauses accepting for a second and retries by itself)."""
    exc = context.get("exception")
    if isinstance(exc, OSError) and exc.errno in _ACCEPT_ERRORS:
        now = time.monotonic()
        if now - _last_report[0] >= 10:
            _last_report[0] = now
            _say(f"sediment: cannot accept a connection ({os.strerror(exc.errno or 0)}); "
                 "retrying\n")
        return
    try:
        loop.default_exception_handler(context)
    except Exception:
        _say(f"sediment: {context.get('message', 'an error in the event loop')} "
             f"({type(exc).__name__ if exc else 'no exception'}); it could not be logged\n")


class QuietDisconnects:
    """A client that went away mid-body (or was cut off at its deadline) ends its request
    without the traceback uvicorn would log for each: 200 slow bodies meant 200 of them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with contextlib.suppress(ClientDisconnect):
            await self.app(scope, receive, send)


class _Server(uvicorn.Server):
    """Told to exit, it first starts ``on_exit`` on a thread of its own (the persona
    workers are killed, so a resolution in flight fails at once instead of holding the
    graceful shutdown until its time limit)."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None] | None) -> None:
        super().__init__(config)
        self.on_exit = on_exit

    def handle_exit(self, sig: int, frame: Any) -> None:
        if self.on_exit is not None:
            threading.Thread(target=self.on_exit, daemon=True).start()
        super().handle_exit(sig, frame)


def http_server(app: ASGIApp, limits: Limits | None = None,
                on_exit: Callable[[], None] | None = None,
                forwarded_allow_ips: str | None = None) -> uvicorn.Server:
    """A uvicorn server for ``app`` with :class:`Limits` (not yet running), trusting the
    proxy headers of ``forwarded_allow_ips`` (None: uvicorn's ``FORWARDED_ALLOW_IPS``,
    else 127.0.0.1)."""
    limits = limits or Limits()
    cap = limits.max_connections or connection_cap()
    nofile = file_limit()
    spare = (nofile - cap) if nofile is not None else 256
    config = uvicorn.Config(QuietDisconnects(app), log_level="warning", lifespan="on",
                            http=guarded_protocol(limits),
                            timeout_keep_alive=limits.keep_alive_seconds,
                            h11_max_incomplete_event_size=limits.max_header_bytes,
                            backlog=max(8, min(128, spare // 2)),
                            forwarded_allow_ips=forwarded_allow_ips)
    return _Server(config, on_exit)


def run(server: uvicorn.Server, sock: socket.socket) -> None:
    """Run ``server`` on the listening ``sock`` until it is told to exit (SIGINT or
    SIGTERM in the main thread), with :func:`loop_errors` handling the loop's errors."""

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(loop_errors)
        await server.serve(sockets=[sock])

    run_async(main)

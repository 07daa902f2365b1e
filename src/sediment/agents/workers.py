"""Killable worker processes for Lua personas: the time limit is the parent's, and hard.

A Lua count hook cannot stop a single long call into a C function (a pathological
``string.find`` pattern), and a thread cannot be killed, so every Lua load and resolution
runs in a worker process (:mod:`sediment.agents.lua_worker`) that the parent kills at the
deadline. The parent measures the deadline from the moment the resolution asks for a
worker, so it covers waiting for a busy worker (not starting a new one, which happens once
per worker and has its own bound), the script, and every ``context`` call,
which the parent serves (on a thread it stops waiting for at the deadline) while the
worker waits for the answer. The worker runs the same sandbox as before with a soft limit
slightly shorter, so a plain endless loop ends in the worker and the worker is reused.

Workers are plain subprocesses of this interpreter (``python -I``, this process's
``sys.path``), reused for :data:`MAX_USES` jobs, in a new session (a terminal's Ctrl-C
goes to the server only), each with ``RLIMIT_CPU`` set per job so a worker whose parent
died cannot spin on. At most ``size`` run at once; :func:`close_workers` kills them all
(server shutdown), after which resolutions fail at once instead of starting new ones.

Messages are length-prefixed JSON both ways (never pickle: the worker runs untrusted
scripts, and the parent must not deserialise objects from it).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import IO, Any

from sediment.agents.model import PersonaContext
from sediment.errors import AgentError, AgentTimeoutError, SedimentError

__all__ = [
    "MAX_MESSAGE",
    "MAX_USES",
    "WorkerPool",
    "close_workers",
    "default_pool",
    "read_message",
    "size_default_pool",
    "write_message",
]

MAX_MESSAGE = 64 * 1024 * 1024
"""Bytes one message may hold (a prompt is at most a million characters)."""
MAX_USES = 500
"""Jobs a worker runs before it is replaced."""
START_TIMEOUT = 60.0
"""Seconds a new worker may take to say it is ready (not counted in a persona's limit)."""
_HEADER = struct.Struct(">I")
_BOOT = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
         "from sediment.agents.lua_worker import main; main()")


def write_message(out: IO[bytes], message: Mapping[str, Any]) -> None:
    """One message: its length (4 bytes, big-endian), then UTF-8 JSON (a value JSON has no
    type for, such as a TOML date in a persona's config, goes as its text, as it reached
    Lua before)."""
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":"),
                      default=str).encode()
    if len(data) > MAX_MESSAGE:
        raise AgentError(f"a persona message of {len(data)} bytes is over the limit of "
                         f"{MAX_MESSAGE}")
    out.write(_HEADER.pack(len(data)) + data)
    out.flush()


def read_message(src: IO[bytes]) -> dict[str, Any] | None:
    """The next message, or None at end of input (blocking; the worker's side)."""
    head = _read_exactly(src, _HEADER.size)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > MAX_MESSAGE:
        raise AgentError(f"a persona message of {size} bytes is over the limit")
    body = _read_exactly(src, size)
    if body is None:
        return None
    value = json.loads(body)
    if not isinstance(value, dict):
        raise AgentError("a persona message must be a JSON object")
    return value


def _read_exactly(src: IO[bytes], n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        piece = src.read(n - len(buf))
        if not piece:
            return None
        buf.extend(piece)
    return bytes(buf)


class _Late(Exception):
    """The deadline passed."""


class _Gone(Exception):
    """The worker exited, or was killed."""


class _Worker:
    """One worker process, read with a deadline."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOT, json.dumps(sys.path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True,
            start_new_session=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.fd = self.proc.stdout.fileno()
        self.buffer = bytearray()
        self.uses = 0
        try:
            ready = self.recv(time.monotonic() + START_TIMEOUT)
        except (_Late, _Gone):
            self.kill()
            raise AgentError("the Lua persona worker did not start (see the server's "
                             "log)") from None
        if ready.get("ready") is not True:
            self.kill()
            raise AgentError("the Lua persona worker did not start")

    def send(self, message: Mapping[str, Any]) -> None:
        try:
            write_message(self.stdin, message)
        except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
            raise _Gone from None

    def recv(self, deadline: float) -> dict[str, Any]:
        while True:
            if len(self.buffer) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(self.buffer)
                if size > MAX_MESSAGE:
                    raise _Gone
                end = _HEADER.size + size
                if len(self.buffer) >= end:
                    body = bytes(self.buffer[_HEADER.size:end])
                    del self.buffer[:end]
                    try:
                        value = json.loads(body)
                    except ValueError:
                        raise _Gone from None
                    if not isinstance(value, dict):
                        raise _Gone
                    return value
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Late
            try:
                readable, _, _ = select.select([self.fd], [], [], left)
            except (OSError, ValueError):
                raise _Gone from None
            if not readable:
                raise _Late
            try:
                piece = os.read(self.fd, 1 << 20)
            except OSError:
                raise _Gone from None
            if not piece:
                raise _Gone
            self.buffer.extend(piece)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if f is not None:
                    f.close()

    def exit_reason(self) -> str:
        code = self.proc.poll()
        if code is None or code == 0:
            return "the Lua persona worker stopped"
        if code < 0:
            return f"the Lua persona worker was stopped by signal {-code}"
        return f"the Lua persona worker exited with status {code}"


def _call_with_deadline(fn: Callable[[], Any], deadline: float) -> Any:
    """``fn()`` on a daemon thread; past ``deadline`` stop waiting (raise ``_Late``) and let
    it finish on its own (a context call is bounded work; the persona's limit is not)."""
    done = threading.Event()
    box: list[Any] = []

    def run() -> None:
        try:
            box.append((True, fn()))
        except BaseException as exc:  # handed back to the waiting thread
            box.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="sediment-persona-context", daemon=True).start()
    if not done.wait(max(0.0, deadline - time.monotonic())):
        raise _Late
    ok, value = box[0]
    if not ok:
        raise value
    return value


def _context_call(context: PersonaContext | None, message: Mapping[str, Any],
                  deadline: float) -> dict[str, Any]:
    """The answer to a worker's ``context`` call: ``{"result": ...}`` or ``{"error": ...}``."""
    if context is None:
        return {"error": "context is not available while a persona loads"}
    kind, arg = message.get("call"), message.get("arg")
    fn: Callable[[], Any]
    if kind == "search" and isinstance(arg, dict):
        fn = lambda: context.search(arg)  # noqa: E731
    elif kind == "get" and isinstance(arg, int):
        fn = lambda: context.get(arg)  # noqa: E731
    elif kind == "sources":
        fn = context.sources
    else:
        return {"error": f"unknown context call {str(kind)[:40]!r}"}
    try:
        return {"result": _call_with_deadline(fn, deadline)}
    except _Late:
        raise
    except SedimentError as exc:
        return {"error": str(exc)}
    except Exception as exc:
        return {"error": f"context.{kind} failed: {type(exc).__name__}: {str(exc)[:500]}"}


class WorkerPool:
    """At most ``size`` workers at once; idle ones are kept for the next job."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._closed = False

    def run(self, job: Mapping[str, Any], *, name: str, timeout: float,
            context: PersonaContext | None = None) -> Any:
        """Run ``job`` (see :mod:`sediment.agents.lua_worker`) within ``timeout`` seconds in
        all, serving its context calls; the worker's result, or an AgentError naming
        ``name`` (AgentTimeoutError past the limit; the worker is then killed)."""
        started = time.monotonic()
        deadline = started + timeout
        late = AgentTimeoutError(f"persona {name}: the script ran past its time limit of "
                                 f"{timeout:g}s")
        if not self._slots.acquire(timeout=timeout):
            raise AgentTimeoutError(f"{late} (all {self.size} Lua persona workers were "
                                    "busy)")
        worker: _Worker | None = None
        clean = False
        try:
            taking = time.monotonic()
            worker = self._take()
            if worker.uses == 0:
                deadline += time.monotonic() - taking  # a new process's start-up
            left = deadline - time.monotonic()
            if left <= 0:
                clean = True
                raise late
            worker.uses += 1
            worker.send({**job, "timeout": max(left - min(0.1, left * 0.1), 0.001),
                         "limit": timeout})
            while True:
                message = worker.recv(deadline)
                if "call" in message:
                    worker.send(_context_call(context, message, deadline))
                    continue
                clean = True
                if "error" in message:
                    text = str(message["error"])
                    raise AgentTimeoutError(text) if message.get("kind") == "timeout" \
                        else AgentError(text)
                return message.get("result")
        except _Late:
            raise late from None
        except _Gone:
            reason = worker.exit_reason() if worker is not None else "no worker"
            if self._closed:
                reason = "persona work stopped: the server is shutting down"
            raise AgentError(f"persona {name}: {reason}") from None
        finally:
            if worker is not None:
                self._give_back(worker, clean)
            self._slots.release()

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise _Gone
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                self._all.discard(worker)
                worker.kill()
        worker = _Worker()
        with self._lock:
            if self._closed:
                worker.kill()
                raise _Gone
            self._all.add(worker)
        return worker

    def _give_back(self, worker: _Worker, clean: bool) -> None:
        with self._lock:
            if clean and not self._closed and worker.alive() and worker.uses < MAX_USES \
                    and not worker.buffer:
                self._idle.append(worker)
                return
            self._all.discard(worker)
        worker.kill()

    def close(self) -> None:
        """Kill every worker, busy or idle; later jobs fail at once."""
        with self._lock:
            self._closed = True
            workers = list(self._all)
            self._all.clear()
            self._idle.clear()
        for worker in workers:
            worker.kill()

    def count(self) -> int:
        """Worker processes alive now (tests and the benchmark)."""
        with self._lock:
            return sum(1 for w in self._all if w.alive())


_default: WorkerPool | None = None
_default_size: int | None = None
_default_lock = threading.Lock()


def size_default_pool(size: int | None) -> None:
    """How many workers the process's pool starts (the configuration's
    ``SEDIMENT_PERSONA_WORKERS``, handed down by the command that serves personas); None:
    one per CPU, 2 to 8. Applies to a pool not started yet."""
    global _default_size
    with _default_lock:
        _default_size = size


def default_pool() -> WorkerPool:
    """The process's pool: :func:`size_default_pool`'s size, else one per CPU (2 to 8)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = WorkerPool(_default_size or min(max(os.cpu_count() or 1, 2), 8))
        return _default


def close_workers() -> None:
    """Kill the default pool's workers (server shutdown; also at interpreter exit)."""
    with _default_lock:
        pool = _default
    if pool is not None:
        pool.close()


atexit.register(close_workers)

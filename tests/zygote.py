"""Run the ``sediment`` console script's entry point in a fresh process forked from a
process that has already imported it (a "zygote"), instead of starting Python each time.

The suite starts thousands of one-shot ``sediment`` commands; each paid half a second or
more of interpreter start-up and imports before doing any work. :func:`run` gives the same
result as ``subprocess.run([SEDIMENT, *args], cwd=..., env=..., capture_output=True,
text=True, timeout=..., stdin=DEVNULL)``, and every command still is the real command:

- the same entry point (``sediment.cli:main``, what ``[project.scripts]`` names), called
  the way the console script calls it (``sys.exit(main())`` at the top level of
  ``__main__``), so exit codes, uncaught exceptions, thread joins, ``atexit`` handlers and
  the flushing of stdout and stderr are the interpreter's own shutdown;
- its own OS process (a session of its own), with its own argv, cwd and environment
  (``os.environ`` replaced wholesale), stdin from /dev/null, stdout and stderr pipes and
  exit status; the zygote only imports modules and never calls into Sediment, so no
  config, cache or state is shared between commands.

What it does not cover is the interpreter's start-up: the console script file, ``site``,
and anything read from the environment when Python starts or a module is first imported.
So a request whose environment differs from the zygote's in a variable that acts then
(``PYTHON*``, locale, loader, BLAS/OpenMP and ``OTEL_*`` variables) runs as a plain
subprocess, and so does every request when ``SEDIMENT_TEST_FORK=0`` is in the environment
(the whole run, or one command's ``env``): the tests of the installed script itself
(tests/cli/test_zygote.py, tests/docs/test_launcher.py, the README and install pages' shell
blocks) keep covering it.
Also shared: the hash seed of ``str`` (one per zygote, as ``PYTHONHASHSEED`` would fix it).

For commands a shell runs (the docs pages' blocks), :func:`launcher` writes a ``sediment``
to put first on the shell's PATH: a ``python -IS`` script that imports only this file's
client half and calls :func:`launch`, which sends its own argv (``argv[0]`` the installed
script's path), cwd, environment and its stdin, stdout and stderr fds to the zygote, so the
command reads and writes the shell's pipes itself; it forwards SIGINT, SIGTERM, SIGHUP and
SIGQUIT to the command and exits with its status (or dies of its signal). Where :func:`run`
would start a plain subprocess, or the zygote is gone, it execs the installed script.

One zygote per test process (so per xdist worker), started on first use with the test
process's interpreter and stopped by :func:`stop` (a session fixture in tests/conftest.py);
and a second one, the servers' zygote, for :func:`script`: the servers and other processes
a test starts itself (``subprocess.Popen``, an MCP client's stdio parameters) run through
its launcher, and it preloads what a server imports too.
Run as a script, this file is the zygote: it listens on a Unix socket, and forks a handler
per connection, which forks the command and reports its pid and then its exit status, so
the zygote never waits on a command and commands can run concurrently. A request is a JSON
object (argv, cwd, env) and two fds (stdout, stderr; stdin is /dev/null) or three (stdin,
stdout, stderr).
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import sys
import threading
from collections.abc import Mapping

PRELOAD = ("sediment.cli", "sediment.cli._options", "sediment.cli._workspace",
           "sediment.config", "sediment.ops.embedding", "sediment.ops.query",
           "sediment.server.principals", "sediment.memory", "sediment.ingest",
           "numpy", "pydantic", "pydantic_settings", "rich.console", "click")
"""What most commands import (measured with ``python -X importtime``); none of these reads
the environment or the terminal when imported, and none starts a thread."""

SERVER_PRELOAD = ("sediment.cli._serve", "sediment.cli._ui", "sediment.server.serving",
                  "sediment.server.web", "sediment.server.api", "sediment.server.oauth",
                  "sediment.agents.workers", "sediment.server.mcp", "sediment.server.stdio",
                  "rich.logging", "uvicorn.protocols.websockets.auto", "uvicorn.lifespan.on",
                  "uvicorn.loops.auto")
"""What ``sediment serve`` and ``sediment ui`` import besides, before they answer (a server
spent some 5 s of its start importing the MCP SDK, Starlette and uvicorn), preloaded by the
servers' zygote only: a command's exit tears down every module the zygote loaded (and so
copies their pages), which made a one-shot command 0.06-0.14 s slower from a zygote holding
these too. None reads the terminal or starts a thread when imported; the one that reads the
environment (OpenTelemetry, under the MCP SDK: ``OTEL_*``) is in ``STARTUP_PREFIXES``."""

STARTUP_PREFIXES = ("PYTHON", "LC_", "LD_", "OPENBLAS", "OMP_", "MKL_", "GOTO", "MALLOC_",
                    "OTEL_")
STARTUP_NAMES = frozenset({"LANG", "LANGUAGE", "TZ"})
"""Variables that act when the interpreter starts or a preloaded module is imported: a
request that changes one runs as a plain subprocess."""

OPT_OUT = "SEDIMENT_TEST_FORK"
_HEADER = struct.Struct("!I")


# -- the zygote and its handlers (this file run as a script) ----------------------------
def _serve(path: str, servers: bool) -> dict[str, object]:
    """Listen on ``path`` until the parent dies. Returns only in a forked command, set up
    as its request asks and ready to run the console script."""
    import gc
    import importlib
    import select

    for module in PRELOAD + (SERVER_PRELOAD if servers else ()):
        importlib.import_module(module)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    parent = os.getppid()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    gc.freeze()  # what the commands share stays shared: no copy-on-write by the collector
    while True:
        ready, _, _ = select.select([listener], [], [], 1.0)
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if os.getppid() != parent:
            os._exit(0)
        if not ready:
            continue
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        if os.fork() == 0:
            listener.close()
            return _handle(conn)
        conn.close()


def _recv_exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError("the client hung up")
        data += chunk
    return data


def _handle(conn: socket.socket) -> dict[str, object]:
    """One connection, in a process of its own: receive the request and its two fds,
    fork the command, send its pid, wait for it, send its wait status."""
    try:
        head, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
        head += _recv_exactly(conn, _HEADER.size - len(head))
        import json

        request = json.loads(_recv_exactly(conn, _HEADER.unpack(head)[0]))
        pid = os.fork()
        if pid == 0:
            conn.close()
            return _become_command(request, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall(f"{pid}\n".encode())
        _wait_or_hang_up(conn, pid)
        _, status = os.waitpid(pid, 0)
        conn.sendall(f"{status}\n".encode())
    except (OSError, EOFError, ValueError):
        pass
    os._exit(0)


def _wait_or_hang_up(conn: socket.socket, pid: int) -> None:
    """Until the command ends; if the client hangs up first (it was killed: a launcher
    standing for the command under SIGKILL, or a test process gone), kill the command's
    group as that SIGKILL would have killed the command itself."""
    import contextlib
    import select

    pidfd = os.pidfd_open(pid)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(conn, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if pidfd in ready:
                return
            if conn.fileno() in ready and not conn.recv(64):
                _signal_group(pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)  # killed before its setsid()
                return
    finally:
        os.close(pidfd)


def _become_command(request: dict[str, object], fds: list[int]) -> dict[str, object]:
    try:
        os.setsid()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        import time
        time.tzset()
        os.chdir(str(request["cwd"]))
        if len(fds) == 2:  # stdout and stderr; stdin is /dev/null
            fds.insert(0, os.open(os.devnull, os.O_RDONLY))
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        return request
    except BaseException as exc:  # nothing of the command ran: say why, like exec would
        os.write(2, f"zygote: cannot start the command: {exc!r}\n".encode())
        os._exit(127)


# -- the test side -----------------------------------------------------------------------
class _Zygote:
    def __init__(self, env: dict[str, str], servers: bool = False) -> None:
        import subprocess
        import tempfile

        self.dir = tempfile.mkdtemp(prefix="sediment-zygote-")
        self.path = os.path.join(self.dir, "socket")
        self.env = dict(env)
        self.log = os.path.join(self.dir, "log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, __file__, self.path, *(["servers"] if servers else [])],
                env=self.env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.proc.stdout.close()
        if line != b"ready\n":
            self.stop()
            with open(self.log, encoding="utf-8", errors="replace") as f:
                raise RuntimeError(f"the sediment zygote did not start:\n{f.read()}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        import shutil

        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


_zygote: _Zygote | None = None
_servers: _Zygote | None = None
"""The zygote of :func:`script`'s long-running commands (it preloads ``SERVER_PRELOAD``)."""
_starting = threading.Lock()
"""Held while a zygote starts: threads' first commands would each start one and stop the
others'."""


def stop() -> None:
    """Stop this process's zygotes, if it started any."""
    global _zygote, _servers
    for z in (_zygote, _servers):
        if z is not None:
            z.stop()
    _zygote = _servers = None


def _startup(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES) or k in STARTUP_NAMES}


def _forkable(env: Mapping[str, str], cwd: str, base: Mapping[str, str]) -> bool:
    """Whether a zygote started with environment ``base`` can run a command with ``env``
    in ``cwd`` (else it runs as a plain subprocess: see the module's docstring)."""
    if env.get(OPT_OUT) == "0" or not os.path.isdir(cwd):
        return False
    return _startup(env) == _startup(base)


def run(argv: list[str], *, cwd: str | os.PathLike[str], env: dict[str, str],
        timeout: float) -> tuple[int, str, str]:
    """``(returncode, stdout, stderr)`` of the command ``argv`` (the ``sediment`` script
    and its arguments), as ``subprocess.run(argv, capture_output=True, text=True,
    stdin=DEVNULL, ...)`` gives them; raises ``subprocess.TimeoutExpired`` likewise."""
    import subprocess

    global _zygote
    cwd = os.fspath(cwd)
    if not _forkable(env, cwd, os.environ if _zygote is None else _zygote.env):
        p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, p.stderr
    return _run_forked(_started().path, argv, cwd, env, timeout)


def _started(servers: bool = False) -> _Zygote:
    global _zygote, _servers
    with _starting:
        z = _servers if servers else _zygote
        if z is None or not z.alive():
            if z is not None:
                z.stop()
            z = _Zygote(dict(os.environ), servers)
            if servers:
                _servers = z
            else:
                _zygote = z
        return z


LAUNCHER = """#!{python} -IS
# Runs the `sediment` console script {real} forked from a test process's zygote (tests/zygote.py).
import sys
sys.path.append({tests!r})
import zygote
zygote.launch({socket!r}, {real!r}, {base!r})
"""


def launcher(real: str, servers: bool = False) -> str:
    """A directory holding a ``sediment`` that runs the console script ``real`` forked from
    this process's zygote (see :func:`launch`), or its servers' zygote, to put first on a
    shell's PATH."""
    z = _started(servers)
    bindir = os.path.join(z.dir, "bin")
    script = os.path.join(bindir, "sediment")
    if not os.path.exists(script):
        os.makedirs(bindir, exist_ok=True)
        text = LAUNCHER.format(python=sys.executable, real=real, socket=z.path,
                               tests=os.path.dirname(os.path.abspath(__file__)),
                               base=_startup(z.env))
        with open(script + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(script + ".tmp", 0o755)
        os.replace(script + ".tmp", script)
    return bindir


def script(real: str | os.PathLike[str]) -> str:
    """What to start for a long-running ``sediment`` (a server a test runs with
    ``subprocess.Popen``, an MCP client's stdio parameters, or ``subprocess.run`` where a
    test needs its own handle on the process): :func:`launcher`'s ``sediment`` over the
    servers' zygote (``SERVER_PRELOAD``), the command forked from it standing for it as a
    process
    (the command's stdio, its exit status or its signal, SIGINT, SIGTERM, SIGHUP and
    SIGQUIT forwarded, and SIGKILL ends the command too: see :func:`_wait_or_hang_up`);
    ``real`` itself when the whole run sets ``SEDIMENT_TEST_FORK=0``. Not for a test that
    needs the server's own pid or limits set on it before it runs (``preexec_fn``)."""
    real = os.fspath(real)
    if os.environ.get(OPT_OUT) == "0":
        return real
    return os.path.join(launcher(real, servers=True), "sediment")


def launch(path: str, real: str, base: dict[str, str]) -> None:
    """Be the command ``real ARGS`` (``ARGS`` this process's arguments): have the zygote
    listening on ``path`` (started with the startup variables ``base``) fork it with this
    process's cwd, environment, stdin, stdout and stderr, forward SIGINT, SIGTERM, SIGHUP
    and SIGQUIT to it, and exit as it did (its code, or killed by its signal). Where
    :func:`run` would run a plain subprocess, or the zygote is gone, exec ``real``."""
    argv = [real, *sys.argv[1:]]
    env = dict(os.environ)
    if "_" in env:
        env["_"] = real  # what the shell sets it to: the command's path
    try:
        cwd = os.getcwd()
        if not _forkable(env, cwd, base):
            raise OSError("not forkable")
        conn = _send(path, argv, cwd, env, [0, 1, 2])
    except OSError:
        os.execve(real, argv, env)
    pid = 0
    pending: list[int] = []

    def forward(sig: int, _frame: object) -> None:
        if pid:
            _signal_group(pid, sig)
        else:
            pending.append(sig)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, forward)
    reply = b""
    with conn:
        while chunk := conn.recv(64):
            reply += chunk
            if not pid and b"\n" in reply:
                pid = int(reply.split(b"\n")[0])
                for sig in pending:
                    _signal_group(pid, sig)
    lines = reply.split(b"\n")
    if len(lines) < 3:
        os.write(2, f"sediment launcher: the zygote failed to run {argv}: {reply!r}\n".encode())
        sys.exit(127)
    code = os.waitstatus_to_exitcode(int(lines[1]))
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    sys.exit(code)


def _signal_group(pid: int, sig: int) -> None:
    import contextlib

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _run_forked(path: str, argv: list[str], cwd: str, env: dict[str, str],
                timeout: float) -> tuple[int, str, str]:
    import selectors
    import subprocess
    import time

    deadline = time.monotonic() + timeout
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    conn: socket.socket | None = None
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    reply = b""
    killed = expired = False
    try:
        conn = _send(path, argv, cwd, env, [out_w, err_w])
        os.close(out_w)
        os.close(err_w)
        out_w = err_w = -1
        with selectors.DefaultSelector() as sel:
            for fd in (out_r, err_r, conn.fileno()):
                sel.register(fd, selectors.EVENT_READ)
            pid: int | None = None
            while sel.get_map():
                left = deadline - time.monotonic()
                events = sel.select(left) if left > 0 else []
                if not events:
                    if killed or pid is None:
                        expired = True
                        break
                    _kill_group(pid)  # then collect what it wrote and its end, as run() does
                    killed = True
                    deadline = time.monotonic() + 10
                for key, _ in events:
                    fd = int(key.fd)
                    data = os.read(fd, 65536)
                    if not data:
                        sel.unregister(fd)
                    elif fd == conn.fileno():
                        reply += data
                        if pid is None and b"\n" in reply:
                            pid = int(reply.split(b"\n")[0])
                    else:
                        chunks[fd].append(data)
    finally:
        for fd in (out_r, err_r, out_w, err_w):
            if fd >= 0:
                os.close(fd)
        if conn is not None:
            conn.close()
    lines = reply.split(b"\n")
    if killed or expired:
        raise subprocess.TimeoutExpired(argv, timeout, _text(chunks[out_r]),
                                        _text(chunks[err_r]))
    if len(lines) < 3:
        raise RuntimeError(f"the sediment zygote failed to run {argv}: {reply!r}")
    code = os.waitstatus_to_exitcode(int(lines[1]))
    return code, _text(chunks[out_r]), _text(chunks[err_r])


def _send(path: str, argv: list[str], cwd: str, env: Mapping[str, str],
          fds: list[int]) -> socket.socket:
    """Ask the zygote listening on ``path`` to run a command with the given stdio ``fds``
    (stdout and stderr, stdin then /dev/null; or stdin, stdout and stderr). It answers on
    the returned connection with the command's pid, then its wait status, a line each."""
    body = _dumps(argv, cwd, env)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        socket.send_fds(conn, [_HEADER.pack(len(body))], fds)
        conn.sendall(body)
    except BaseException:
        conn.close()
        raise
    return conn


def _dumps(argv: list[str], cwd: str, env: Mapping[str, str]) -> bytes:
    """``json.dumps({"argv": argv, "cwd": cwd, "env": env}).encode()``, with json's own
    string encoder but without importing ``json`` (and ``re``), a third of a launch's cost."""
    from _json import encode_basestring_ascii as q

    pairs = ", ".join(f"{q(k)}: {q(v)}" for k, v in env.items())
    return (f'{{"argv": [{", ".join(q(a) for a in argv)}], "cwd": {q(cwd)}, '
            f'"env": {{{pairs}}}}}').encode()


def _text(chunks: list[bytes]) -> str:
    """What ``text=True`` makes of the bytes: the locale's encoding, universal newlines."""
    import locale

    data = b"".join(chunks).decode(locale.getpreferredencoding(False))
    return data.replace("\r\n", "\n").replace("\r", "\n")


def _kill_group(pid: int) -> None:
    _signal_group(pid, signal.SIGKILL)


if __name__ == "__main__":
    sys.path[0] = os.path.dirname(sys.executable)  # the console script's own directory
    _request = _serve(sys.argv[1], sys.argv[2:] == ["servers"])
    sys.argv = [str(a) for a in _request["argv"]]  # type: ignore[attr-defined]
    sys.orig_argv = [sys.executable, *sys.argv]
    del _request
    from sediment.cli import main

    sys.argv[0] = sys.argv[0].removesuffix(".exe")
    sys.exit(main())  # type: ignore[func-returns-value]

"""The ``sediment`` fixture's commands, forked from a zygote (tests/zygote.py), behave as
the installed console script does: same output and exit code, their own environment,
cwd and process, run concurrently, and killed on a timeout."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests import zygote
from tests.conftest import SEDIMENT, Run, run_sediment
from tests.mcp.conftest import make_store

REAL = {zygote.OPT_OUT: "0"}


def _env(**extra: str) -> dict[str, str]:
    """The test's environment, forked even when the whole run opts out."""
    env = {k: v for k, v in os.environ.items() if k != zygote.OPT_OUT}
    return {**env, "SEDIMENT_EMBEDDER": "hash", **extra}


@pytest.mark.parametrize("args", [
    ("--version",),
    ("no-such-command",),
    ("memory", "list", "--json"),
])
def test_a_forked_command_matches_the_console_script(args: tuple[str, ...],
                                                     tmp_path: Path) -> None:
    forked = run_sediment(*args, cwd=tmp_path, env=_env())
    real = run_sediment(*args, cwd=tmp_path, env=_env(**REAL))
    assert forked == real


def test_an_uncaught_exception_prints_its_traceback_and_exits_1(tmp_path: Path) -> None:
    args = ("--debug", "search", "x", "--dir", str(tmp_path / "missing"))
    forked = run_sediment(*args, cwd=tmp_path, env=_env())
    real = run_sediment(*args, cwd=tmp_path, env=_env(**REAL))
    assert forked.code == real.code == 1
    assert forked.err.startswith("Traceback (most recent call last):\n")
    assert forked.err.splitlines()[-1] == real.err.splitlines()[-1] == (
        f"sediment.errors.NotFoundError: --dir {tmp_path / 'missing'}: no such directory")


def test_each_command_has_its_own_environment(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the zygote's environment (the test process's when it started) nor an earlier
    command's reaches a command: it sees its own only."""
    zygote.stop()
    monkeypatch.setenv("SEDIMENT_EMBED_DIM", "abc")
    try:
        bad = run_sediment("memory", "list", "--json", cwd=tmp_path, env=_env())
        assert bad.code == 1 and "SEDIMENT_EMBED_DIM='abc'" in bad.err
        env = {k: v for k, v in _env().items() if k != "SEDIMENT_EMBED_DIM"}
        good = run_sediment("memory", "list", "--json", cwd=tmp_path, env=env)
        assert good.code == 0, good.err
        assert good.json()["total"] == 0
    finally:
        zygote.stop()


def test_a_relative_path_is_read_from_the_commands_own_cwd(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        r = run_sediment("search", "x", "--dir", "missing", cwd=tmp_path / name, env=_env())
        assert r.code == 1 and "--dir missing: no such directory" in r.err


def test_commands_run_concurrently_from_threads(tmp_path: Path) -> None:
    results: list[Run] = []

    def one() -> None:
        results.append(run_sediment("--version", cwd=tmp_path, env=_env()))

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [(r.code, r.err) for r in results] == [(0, "")] * 4
    assert {r.out for r in results} == {results[0].out}


def test_a_command_past_its_timeout_is_killed(tmp_path: Path) -> None:
    """As ``subprocess.run``: TimeoutExpired, and nothing of the command left running."""
    where = tmp_path / "serving"
    where.mkdir()
    with pytest.raises(subprocess.TimeoutExpired):
        run_sediment("serve", "--transport", "http", "--port", "0", "--dir", str(tmp_path),
                     cwd=where, env=_env(), timeout=3)
    left = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cwd(pid) == where]
    assert left == []


def _cwd(pid: str) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None


def test_startup_variables_and_the_opt_out_use_the_real_script(tmp_path: Path) -> None:
    run_sediment("--version", cwd=tmp_path, env=_env())
    assert zygote._zygote is not None
    base = zygote._zygote.env
    assert zygote._forkable(_env(), str(tmp_path), base)
    assert not zygote._forkable(_env(**REAL), str(tmp_path), base)
    assert not zygote._forkable(_env(PYTHONPATH=str(tmp_path)), str(tmp_path), base)
    warnings = _env(PYTHONWARNINGS="error::UserWarning:zygote")
    assert not zygote._forkable(warnings, str(tmp_path), base)
    # OpenTelemetry, which the servers' zygote preloads, reads OTEL_* when imported
    assert not zygote._forkable(_env(OTEL_PROPAGATORS="b3"), str(tmp_path), base)
    assert SEDIMENT.exists()


def _serve(script: str, store: Path) -> tuple[subprocess.Popen[str], int, str]:
    """``sediment serve --transport http`` started with ``script``, once it says where it
    listens; its process, its own pid (from that line) and the line."""
    env = {**_env(), "SEDIMENT_TOKEN": "test-token-0123456789abcdef"}
    proc = subprocess.Popen([script, "serve", "--transport", "http", "--port", "0", "--dir",
                             str(store), "--no-warm-up"], cwd=store, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/mcp .*; pid (\d+)\)", line)
        assert m is not None, (line, proc.poll())
        with socket.create_connection(("127.0.0.1", int(m.group(1))), timeout=30):
            pass
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return proc, int(m.group(2)), re.sub(r":\d+/|pid \d+", "", line)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_server_through_the_launcher_stops_as_the_script_does(sig: signal.Signals,
                                                                tmp_path: Path) -> None:
    """What a test's ``subprocess.Popen`` of ``zygote.script`` gets: the server's output,
    and the signal reaches it and it exits as the installed script does."""
    ends = []
    store = make_store(tmp_path / "store")
    for script in (zygote.script(SEDIMENT), str(SEDIMENT)):
        proc, pid, line = _serve(script, store)
        assert (pid == proc.pid) == (script == str(SEDIMENT))
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        ends.append((proc.returncode, line, out, err))
        assert not Path(f"/proc/{pid}").exists()
    assert ends[0] == ends[1]


def test_killing_the_launcher_kills_its_server(tmp_path: Path) -> None:
    """SIGKILL cannot be forwarded: the zygote kills the command when its launcher dies."""
    proc, pid, _ = _serve(zygote.script(SEDIMENT), make_store(tmp_path / "store"))
    assert pid != proc.pid and Path(f"/proc/{pid}").exists()
    proc.kill()
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists():
        assert time.monotonic() < deadline, "the server outlived its launcher"
        time.sleep(0.05)
    assert proc.returncode == -signal.SIGKILL

"""The ``sediment`` the docs pages' shell blocks run (tests/zygote.py's launcher) behaves as
the installed console script does through a shell: output, exit status, pipes, stdin,
environment, signals, and the real script itself when the interpreter's start-up matters."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests import zygote
from tests.docs.test_examples import BIN

REAL = str(BIN / "sediment")


def _env(*, launcher: bool) -> dict[str, str]:
    """The test's environment, the launcher used even when the whole run opts out."""
    env = {k: v for k, v in os.environ.items() if k != zygote.OPT_OUT}
    first = zygote.launcher(REAL) if launcher else str(BIN)
    return {**env, "PATH": os.pathsep.join([first, str(BIN), env.get("PATH", "")]),
            "SEDIMENT_EMBEDDER": "hash", "NO_COLOR": "1"}


def _bash(script: str, cwd: Path, *, launcher: bool) -> tuple[int, str, str]:
    p = subprocess.run(["bash", "-c", script], cwd=cwd, env=_env(launcher=launcher),
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("script", [
    "command -v sediment >&2; sediment --version",
    "sediment no-such-command",
    "sediment --version | head -c 3; echo \" ${PIPESTATUS[*]}\"",
    "SEDIMENT_EMBED_DIM=abc sediment memory list --json",
    "mkdir -p sub && cd sub && sediment search x --dir missing",
])
def test_the_launcher_runs_what_the_script_runs(script: str, tmp_path: Path) -> None:
    launched = _bash(script, tmp_path, launcher=True)
    real = _bash(script, tmp_path, launcher=False)
    if script.startswith("command -v"):  # the shell found the launcher, not the script
        found, real_found = launched[2].split("\n", 1)[0], real[2].split("\n", 1)[0]
        assert found != real_found == REAL
        launched = (launched[0], launched[1], launched[2].replace(found, REAL))
    assert launched == real


def test_stdin_stdout_and_a_signal_reach_the_command(tmp_path: Path) -> None:
    """An MCP session over the launcher's own stdin and stdout; SIGTERM to the launcher ends
    the command, and the launcher exits as the script does."""
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}) + "\n"
    ends = []
    for launcher in (True, False):
        env = _env(launcher=launcher)
        script = Path(env["PATH"].split(os.pathsep)[0]) / "sediment"
        proc = subprocess.Popen([script, "serve", "--dir", str(tmp_path)], cwd=tmp_path,
                                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(init)
            proc.stdin.flush()
            reply = json.loads(proc.stdout.readline())
            assert reply["result"]["serverInfo"]["name"] == "sediment"
            proc.send_signal(signal.SIGTERM)
            rest, _ = proc.communicate(timeout=60)  # EOF: every writer, the command too, ended
            ends.append((proc.returncode, rest))
        finally:
            proc.kill()
            proc.wait()
    assert ends[0] == ends[1]


def test_a_startup_variable_runs_the_real_script(tmp_path: Path) -> None:
    """``PYTHONVERBOSE`` acts when Python starts: the launcher execs the installed script,
    whose interpreter then reports its imports (a forked command would print none)."""
    code, out, err = _bash("PYTHONVERBOSE=1 sediment --version", tmp_path, launcher=True)
    assert code == 0 and out.startswith("sediment, version")
    assert "# installing zipimport hook" in err

"""Every ``sediment`` process imports only its own command's modules (issue 14: agents'
hooks and the tests start thousands of them), and the lazy command table stays true."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sediment.cli
from sediment.cli import COMMANDS, MODULES, cli
from sediment.cli.reference import _walk

HEAVY = ("mcp", "uvicorn", "onnxruntime", "faiss", "httpx", "yaml",
         "detect_secrets", "cryptography", "psycopg", "psycopg_pool")
"""Libraries a command that does not serve, embed with MiniLM, call an HTTP embedder, read
manifests, write, sign, or open a database must not load."""

PROBE = """
import json, sys
from sediment.cli import cli
try:
    cli.main(sys.argv[1:], prog_name="sediment", standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy})))
"""


def test_the_command_table_names_each_command_and_its_module() -> None:
    registered = {name: cmd for (path, cmd) in _walk(cli, ["sediment"]) if len(path) == 2
                  for name in [path[1]]}
    assert set(registered) == set(COMMANDS)
    for name, cmd in registered.items():
        assert cmd.callback is not None
        assert cmd.callback.__module__ == COMMANDS[name], name
    package = Path(sediment.cli.__file__).parent
    defining = {f"sediment.cli.{p.stem}" for p in package.glob("_*.py")
                if "@cli.command" in p.read_text() or "@cli.group" in p.read_text()}
    assert defining == set(MODULES)


@pytest.mark.parametrize("args", [
    ["--version"],
    ["search", "how do layers override each other", "-k", "3", "--json"],
    ["layers", "--json"],
    ["inspect", "AGENTS.db", "--json"],
    ["memory", "list", "--json"],
])
def test_a_command_loads_only_what_it_needs(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Layers\n\nA higher layer overrides a lower one.\n")
    env = {**os.environ, "SEDIMENT_EMBEDDER": "hash"}
    compiled = subprocess.run(
        [sys.executable, "-m", "sediment", "compile", "--root", str(tmp_path), "--include",
         "*.md", "--out", str(tmp_path / "AGENTS.db")], cwd=tmp_path, capture_output=True,
        text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert compiled.returncode == 0, compiled.stderr
    p = subprocess.run([sys.executable, "-c", PROBE.format(heavy=repr(set(HEAVY))), *args],
                       cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    loaded = json.loads(p.stdout.splitlines()[-1])
    assert loaded == [], f"sediment {' '.join(args)} loaded {loaded}"


def test_an_unknown_command_loads_no_command_module(tmp_path: Path) -> None:
    """A mistyped command is answered from the table, without importing every command."""
    probe = ("import sys\nfrom sediment.cli import cli\n"
             "try:\n    cli.main(['no-such-command'], prog_name='sediment')\n"
             "except SystemExit as exc:\n    code = exc.code\n"
             "print(code, sorted(m for m in {mods!r} if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", probe.format(mods=MODULES)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert "No such command 'no-such-command'" in p.stderr
    assert p.stdout.strip() == "2 []"

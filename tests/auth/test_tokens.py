"""Tokens that expire, and a shared token kept out of ``ps`` (issue 26 item 19)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from sediment.auth import TokenStore
from sediment.config import Environment, tokens_file
from sediment.server.web._auth import Sessions
from tests import zygote
from tests.conftest import run_sediment
from tests.mcp.conftest import SEDIMENT, free_port, make_store, stop

SHARED = "shared-token-0123456789abcdef"


def sediment(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    r = run_sediment(*args, cwd=Path.cwd(), env=dict(os.environ) if env is None else env,
                     timeout=60)
    return subprocess.CompletedProcess([SEDIMENT, *args], r.code, r.out, r.err)


def test_a_token_stops_working_when_it_expires(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path / "tokens.json")
    now = int(time.time() * 1000)
    live, _ = tokens.create("alice", "writer", now + 3_600_000)
    dead, dead_info = tokens.create("bob", "writer", now - 1)
    forever, _ = tokens.create("carol", "writer")
    assert tokens.verify(live) is not None and tokens.verify(forever) is not None
    assert tokens.verify(dead) is None
    assert dead_info.expired() and [t.expired() for t in tokens.list()] == [False, True, False]
    s = Sessions(None, tokens, actor="server")
    assert s.authenticate(dead) is None
    got = s.authenticate(live)
    assert got is not None
    session = s.open(got[0], got[0].actor, got[1])
    data = json.loads((tmp_path / "tokens.json").read_text())
    data["tokens"][0]["expires_at_ms"] = now - 1
    (tmp_path / "tokens.json").write_text(json.dumps(data))
    assert tokens.verify(live) is None and s.get(session.id) is None
    data["tokens"][2]["expires_at_ms"] = "never"  # not a number: treated as passed
    (tmp_path / "tokens.json").write_text(json.dumps(data))
    assert tokens.verify(forever) is None


def test_token_create_takes_an_expiry() -> None:
    made = sediment("token", "create", "--actor", "alice", "--expires", "2s", "--json")
    assert made.returncode == 0, made.stderr
    out = json.loads(made.stdout)
    assert 1000 < out["expires_at_ms"] - out["created_at_ms"] <= 2000
    assert sediment("token", "create", "--actor", "bob", "--expires", "1h").returncode == 0
    listed = sediment("token", "list").stdout
    assert "expires " in listed.splitlines()[1] and "bob" in listed.splitlines()[1]
    while time.time() * 1000 < out["expires_at_ms"] + 100:
        time.sleep(0.1)
    assert TokenStore(tokens_file(Environment.read())).verify(out["token"]) is None
    assert "expired " in sediment("token", "list").stdout.splitlines()[0]
    for bad in ("0d", "soon", "-1h", "1y", "9999999d"):
        p = sediment("token", "create", "--actor", "alice", "--expires", bad)
        assert p.returncode == 2 and "--expires" in p.stderr and "Traceback" not in p.stderr


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``serve`` with a path it refuses, so it stops right after reading its token."""
    return sediment("serve", "--transport", "http", "--path", "no-slash", *args, env=env)


def test_a_token_on_the_command_line_is_warned_about(tmp_path: Path) -> None:
    argv = _serve("--token", SHARED)
    assert "visible to every user" in argv.stderr and "SEDIMENT_TOKEN" in argv.stderr
    quiet = _serve(env={**os.environ, "SEDIMENT_TOKEN": SHARED})
    assert "visible" not in quiet.stderr and "is not a URL path" in quiet.stderr
    loose = tmp_path / "loose"
    loose.write_text(SHARED + "\n")
    loose.chmod(0o644)
    assert "can be read by other users" in _serve("--token-file", str(loose)).stderr
    empty = tmp_path / "empty"
    empty.write_text("\n")
    p = _serve("--token-file", str(empty))
    assert p.returncode == 1 and "the file is empty" in p.stderr
    p = _serve("--token-file", str(tmp_path / "missing"))
    assert p.returncode == 1 and "cannot read it" in p.stderr
    p = _serve("--token", SHARED, "--token-file", str(loose))
    assert p.returncode == 2 and "not both" in p.stderr


def test_serve_reads_its_token_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text(SHARED + "\n")
    secret.chmod(0o600)
    port = free_port()
    proc = subprocess.Popen([zygote.script(SEDIMENT), "serve", "--transport", "http",
                             "--port", str(port), "--dir", str(make_store(tmp_path / "store")),
                             "--embedder", "hash", "--no-warm-up", "--token-file", str(secret)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None and time.monotonic() < deadline
            try:
                anonymous = httpx.get(f"{base}/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert anonymous.status_code == 401
        ok = httpx.get(f"{base}/health", timeout=30,
                       headers={"Authorization": f"Bearer {SHARED}"})
        assert ok.status_code == 200
    finally:
        stop(proc)


@pytest.mark.parametrize("flag", ["--token", "--token-file"])
def test_the_help_says_where_a_token_should_come_from(flag: str) -> None:
    text = " ".join(sediment("serve", "--help").stdout.split())
    assert flag in text and "(ps, /proc)" in text

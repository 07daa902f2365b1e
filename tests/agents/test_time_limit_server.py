"""The real ``sediment serve``: pathological personas never starve searches nor stop
SIGTERM from stopping the server, and leave no worker process behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.mcp.conftest import SEDIMENT, TOKEN, free_port, make_store

pytestmark = pytest.mark.timeout(240)

HOGS = 45
"""More than anyio's default 40 threads: enough to starve every other request before."""


def _workers_with(mark: str) -> list[int]:
    """Pids of live processes whose environment holds ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if mark.encode() in (entry / "environ").read_bytes():
                stat = (entry / "stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_pathological_personas_starve_nothing_and_sigterm_stops_the_server(
        tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    (tmp_path / "hog.lua").write_text(
        "return { description = 'hog', resolve = function()\n"
        "  string.find(string.rep('a', 200), string.rep('a*', 20) .. 'b')\n"
        "  return { system = 'never' } end }\n")
    (tmp_path / "sediment.toml").write_text('[agents.script.hog]\npath = "hog.lua"\n'
                                            "timeout = 300\n")
    mark = f"SEDIMENT_TEST_MARK_{uuid.uuid4().hex}"
    port = free_port()
    env = {**os.environ, "SEDIMENT_TOKEN": TOKEN, mark: "1", "SEDIMENT_PERSONA_WORKERS": "2"}
    proc = subprocess.Popen(
        [SEDIMENT, "serve", "--transport", "http", "--port", str(port), "--dir", str(store),
         "--embedder", "hash", "--no-warm-up"],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if httpx.get(f"{base}/health", headers=headers, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)

        def hog() -> None:
            # the client gives up; the server must not keep a thread for it
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(f"{base}/agents/hog/prompt", json={}, headers=headers,
                           timeout=0.5)

        clients = [threading.Thread(target=hog) for _ in range(HOGS)]
        for c in clients:
            c.start()
        for c in clients:
            c.join(30)
        time.sleep(1.0)
        assert len(_workers_with(mark)) >= 2  # the server and its busy workers
        for _ in range(5):
            started = time.monotonic()
            r = httpx.post(f"{base}/tools/agents_search", json={"query": "deploy", "k": 1},
                           headers=headers, timeout=20)
            assert r.status_code == 200, r.text
            assert time.monotonic() - started < 10
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if proc.stderr:
            proc.stderr.close()
    time.sleep(0.5)
    assert _workers_with(mark) == []

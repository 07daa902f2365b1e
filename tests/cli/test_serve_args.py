"""``sediment serve`` checks what it is given before serving (issue 15, items 3, 4, 9)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests import zygote
from tests.cli.conftest import SEDIMENT, Runner


@pytest.mark.parametrize("path", ["nope", "", "/mcp path", "/mcp?x=1"])
def test_bad_http_path_is_a_one_line_error(sediment: Runner, tmp_path: Path, path: str) -> None:
    r = sediment("serve", "--transport", "http", "--port", "0", "--path", path,
                 "--dir", str(tmp_path), timeout=60)
    assert r.code == 1, (r.out, r.err)
    assert r.err.startswith("Error: --path") and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_port_in_use_is_a_one_line_error(sediment: Runner, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = sediment("serve", "--transport", "http", "--port", str(port), "--dir",
                     str(tmp_path), "--no-warm-up", timeout=60)
    assert r.code == 1, (r.out, r.err)
    assert r.err.strip() == f"Error: cannot listen on 127.0.0.1:{port}: the address is " \
                            "already in use"


def test_port_0_prints_the_port_bound(tmp_path: Path) -> None:
    env = {**os.environ, "SEDIMENT_EMBEDDER": "hash"}
    proc = subprocess.Popen([zygote.script(str(SEDIMENT)),
                             "serve", "--transport", "http", "--port", "0",
                             "--dir", str(tmp_path), "--no-warm-up"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while line and "serving MCP" not in line:
            line = proc.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        assert m is not None, line
        port = int(m.group(1))
        assert port != 0
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline, "nothing listens on the printed port"
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_serve_missing_dir_is_an_error(sediment: Runner, tmp_path: Path) -> None:
    r = sediment("serve", "--dir", str(tmp_path / "nope"), "--no-warm-up", timeout=60)
    assert r.code == 1 and f"--dir {tmp_path / 'nope'}: no such directory" in r.err


def test_serve_without_layers_says_so(sediment: Runner, tmp_path: Path) -> None:
    r = sediment("serve", "--dir", str(tmp_path), "--no-warm-up", timeout=60)
    assert r.code == 0, r.err
    assert f"no layer files in {tmp_path}" in r.err

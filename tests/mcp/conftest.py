"""Stores and real server processes for the MCP tests; every wait is bounded."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from sediment.embed import HashEmbedder
from sediment.format import Chunk, encode_layer
from tests import zygote

SEDIMENT = str(Path(sys.executable).parent / "sediment")
TOKEN = "test-token-0123456789abcdef"
START_WAIT = 90.0
"""How long a server may take to answer after it is started: a bound, not a timing. On two
cores shared with other test runs a start took 20-30 s."""

DOCS = [
    ("canonical", "Layer precedence is local over user over delta over base.", "docs/a.md:1"),
    ("invariant", "Requests to /billing MUST include the X-Account header.", "docs/b.md:3"),
    ("canonical", "The deploy job pushes containers to staging every night.", "docs/c.md:9"),
]


def make_store(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    emb = HashEmbedder()
    chunks = [Chunk(i, kind, text, "human", 1.0, 0, (src,))
              for i, (kind, text, src) in enumerate(DOCS, 1)]
    md = {"v": 1, "embedding_profile": emb.profile.to_dict()}
    (directory / "AGENTS.db").write_bytes(
        encode_layer(chunks, emb.embed([c.content for c in chunks]), metadata=md))
    return directory


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return make_store(tmp_path / "store")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class HttpServer:
    url: str
    port: int
    process: subprocess.Popen[bytes]


def start_http(store: Path, *extra: str, token: str | None = TOKEN,
               host: str = "127.0.0.1") -> HttpServer:
    port = free_port()
    args = [zygote.script(SEDIMENT), "serve", "--transport", "http", "--host", host,
            "--port", str(port),
            "--dir", str(store), "--embedder", "hash", *extra]
    env = dict(os.environ)
    if token:
        env["SEDIMENT_TOKEN"] = token
    proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {err}")
        try:
            httpx.get(url, timeout=1.0)
            return HttpServer(url, port, proc)
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"server did not start within {START_WAIT:.0f} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    if proc.stderr:
        proc.stderr.close()


@pytest.fixture
def http_server(store: Path) -> Iterator[HttpServer]:
    server = start_http(store)
    yield server
    stop(server.process)

"""A real ``sediment serve --transport http --store URL`` and tokens minted in its database,
for the team server's tests (isolation, roles, load and faults)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests import zygote
from tests.conftest import SEDIMENT
from tests.mcp.conftest import free_port, stop


@dataclass(frozen=True)
class TeamServer:
    base: str
    process: subprocess.Popen[bytes]
    log: Path
    """The server's stderr."""

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"


def mint(url: str, actor: str, role: str) -> str:
    """A token for ``actor`` minted by the real CLI in the store's database."""
    out = subprocess.run([zygote.script(SEDIMENT),
                          "token", "create", "--actor", actor, "--role", role,
                          "--store", url, "--json"], capture_output=True, text=True,
                         timeout=60, check=True)
    token: str = json.loads(out.stdout)["token"]
    return token


def seed_project(url: str, root: Any) -> None:
    """Give the store's project one layer, so ``serve --store`` has a schema to serve."""
    subprocess.run([zygote.script(SEDIMENT),
                    "write", "--store", url, "--embedder", "hash", "--kind", "note",
                    "--content", "The team server keeps every project in PostgreSQL.",
                    "--confidence", "0.9"],
                   capture_output=True, text=True, timeout=60, check=True, cwd=root)


@contextmanager
def serve_http(where: list[str], root: Any, env: Mapping[str, str] | None = None,
               start_s: float = 60) -> Iterator[TeamServer]:
    """``sediment serve --transport http`` over ``where`` (``--store URL`` or ``--dir D``),
    once ``/health`` answers within ``start_s``. Its log goes to a file beside ``root``: a
    pipe nobody reads would fill up and block the server."""
    port = free_port()
    args = [zygote.script(str(SEDIMENT)),
            "serve", "--transport", "http", "--host", "127.0.0.1", "--port",
            str(port), *where, "--embedder", "hash", "--no-warm-up"]
    full = {**os.environ, **(env or {})}
    full.pop("SEDIMENT_TOKEN", None)
    log_path = Path(root).parent / f"serve-{port}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(args, env=full, cwd=root, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + start_s
    try:
        while True:
            if proc.poll() is not None:
                err = log_path.read_text(errors="replace")[-4000:]
                raise RuntimeError(f"server exited with {proc.returncode}: {err}")
            try:
                httpx.get(f"{base}/health", timeout=1.0)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start within {start_s} s") from None
                time.sleep(0.1)
        yield TeamServer(base, proc, log_path)
    finally:
        stop(proc)


@contextmanager
def team_server(url: str, root: Any, env: Mapping[str, str] | None = None
                ) -> Iterator[TeamServer]:
    with serve_http(["--store", url], root, env) as srv:
        yield srv


def call(client: httpx.Client, token: str, tool: str, args: dict[str, Any]) -> httpx.Response:
    return client.post(f"/tools/{tool}", json=args,
                       headers={"Authorization": f"Bearer {token}"})

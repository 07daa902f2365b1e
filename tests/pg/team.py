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
from typing import Any

import httpx

from tests.conftest import SEDIMENT
from tests.mcp.conftest import free_port, stop


@dataclass(frozen=True)
class TeamServer:
    base: str
    process: subprocess.Popen[bytes]

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"


def mint(url: str, actor: str, role: str) -> str:
    """A token for ``actor`` minted by the real CLI in the store's database."""
    out = subprocess.run([SEDIMENT, "token", "create", "--actor", actor, "--role", role,
                          "--store", url, "--json"], capture_output=True, text=True,
                         timeout=60, check=True)
    token: str = json.loads(out.stdout)["token"]
    return token


def seed_project(url: str, root: Any) -> None:
    """Give the store's project one layer, so ``serve --store`` has a schema to serve."""
    subprocess.run([SEDIMENT, "write", "--store", url, "--embedder", "hash", "--kind", "note",
                    "--content", "The team server keeps every project in PostgreSQL.",
                    "--confidence", "0.9"],
                   capture_output=True, text=True, timeout=60, check=True, cwd=root)


@contextmanager
def team_server(url: str, root: Any, env: Mapping[str, str] | None = None
                ) -> Iterator[TeamServer]:
    port = free_port()
    args = [SEDIMENT, "serve", "--transport", "http", "--host", "127.0.0.1", "--port",
            str(port), "--store", url, "--embedder", "hash", "--no-warm-up"]
    full = {**os.environ, **(env or {})}
    full.pop("SEDIMENT_TOKEN", None)
    proc = subprocess.Popen(args, env=full, cwd=root, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"server exited with {proc.returncode}: {err}")
            try:
                httpx.get(f"{base}/health", timeout=1.0)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError("server did not start within 60 s") from None
                time.sleep(0.1)
        yield TeamServer(base, proc)
    finally:
        stop(proc)


def call(client: httpx.Client, token: str, tool: str, args: dict[str, Any]) -> httpx.Response:
    return client.post(f"/tools/{tool}", json=args,
                       headers={"Authorization": f"Bearer {token}"})

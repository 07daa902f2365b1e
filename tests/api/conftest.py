"""A real ``sediment serve --transport http`` over the example project, with two personas
that misbehave (one loops, one fails) beside the three of docs/personas.md."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.agents.project import write_project
from tests.mcp.conftest import TOKEN, HttpServer, start_http, stop

BAD = """
[agents.script.looper]
path = "agents/looper.lua"
timeout = 0.5

[agents.script.failer]
path = "agents/failer.lua"
"""


def write_api_project(root: Path) -> Path:
    write_project(root)
    (root / "agents" / "looper.lua").write_text(
        "return { description = 'loops', resolve = function() while true do end end }")
    (root / "agents" / "failer.lua").write_text(
        "return { description = 'fails', resolve = function() error('kaput') end }")
    with (root / "sediment.toml").open("a") as fh:
        fh.write(BAD)
    return root


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = write_api_project(tmp_path_factory.mktemp("api") / "acme")
    home = root.parent / "home"
    with pytest.MonkeyPatch.context() as mp:
        # Module-scoped, so the per-test isolation of tests/conftest.py is not in force yet.
        mp.setenv("SEDIMENT_CONFIG", str(root / "sediment.toml"))
        mp.setenv("SEDIMENT_EMBEDDER", "hash")
        mp.setenv("SEDIMENT_USER_CONFIG", str(home / "config.toml"))
        mp.setenv("SEDIMENT_CACHE_DIR", str(home / "cache"))
        mp.setenv("SEDIMENT_DATA_DIR", str(home / "data"))
        mp.setenv("SEDIMENT_TOKENS_FILE", str(home / "tokens.json"))
        for var in ("SEDIMENT_ACTOR", "SEDIMENT_DIR", "SEDIMENT_TOKEN"):
            mp.delenv(var, raising=False)
        server = start_http(root, "--no-warm-up")
    yield server
    stop(server.process)


@pytest.fixture
def api(api_server: HttpServer) -> Iterator[httpx.Client]:
    base = api_server.url.removesuffix("/mcp")
    with httpx.Client(base_url=base, timeout=30,
                      headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client

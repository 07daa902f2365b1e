"""The whole agent flow over the SDK client: in memory, over stdio, over streamable HTTP."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from sediment.auth import TokenStore
from sediment.errors import ConfigError
from sediment.format import LayerFile
from sediment.server import build_server, check_binding, is_loopback
from sediment.server.hosts import loopback_names
from tests import zygote
from tests.conftest import files_workspace
from tests.mcp.conftest import SEDIMENT, TOKEN, HttpServer, start_http, stop
from tests.mcp.flow import run_flow

TIMEOUT = 60


def stdio_params(store: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=zygote.script(SEDIMENT),
                                 args=["serve", "--dir", str(store), "--embedder", "hash", *extra],
                                 env=dict(os.environ))


def test_in_memory(store: Path) -> None:
    server = build_server(files_workspace(store))

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                await run_flow(client)

    anyio.run(main)


def test_stdio_subprocess(store: Path) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(stdio_params(store)) as client:
                await run_flow(client)

    anyio.run(main)
    assert LayerFile.open(store / "AGENTS.delta.db").validate() == []


def test_streamable_http_with_token(http_server: HttpServer) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
            async with http, Client(streamable_http_client(http_server.url,
                                                           http_client=http)) as client:
                await run_flow(client)

    anyio.run(main)
    assert http_server.process.poll() is None


def test_http_rejects_missing_or_wrong_token(http_server: HttpServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"},
                    {"Authorization": TOKEN}):
        r = httpx.post(http_server.url, json=body, headers=headers, timeout=10)
        assert r.status_code == 401, headers
    assert http_server.process.poll() is None


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "0:0:0:0:0:0:0:1", "localhost"])
def test_http_checks_host_and_origin_on_every_loopback_bind(store: Path, host: str) -> None:
    """DNS rebinding: a page on evil.example whose name now resolves to a loopback address
    sends its own Host and Origin; every loopback bind refuses both, token or not."""
    server = start_http(store, token=None, host=host)
    try:
        bound = server.url.split("/")[2]
        for forged, status in (({"Origin": "http://evil.example"}, 403),
                               ({"Origin": f"http://evil.example:{server.port}"}, 403),
                               ({"Origin": "null"}, 403),
                               ({"Host": "evil.example"}, 421),
                               ({"Host": f"evil.example:{server.port}"}, 421),
                               ({"Host": f"127.0.0.1.evil.example:{server.port}"}, 421)):
            r = httpx.post(server.url, json=INIT, timeout=10, headers={**ACCEPT, **forged})
            assert r.status_code == status, (host, forged, r.status_code)
        for origin in (f"http://{bound}", f"http://localhost:{server.port}",
                       f"http://127.0.0.1:{server.port}"):
            ok = httpx.post(server.url, json=INIT, timeout=10,
                            headers={**ACCEPT, "Origin": origin})
            assert ok.status_code == 200, (host, origin, ok.text)
        assert server.process.poll() is None
    finally:
        stop(server.process)


@pytest.mark.parametrize("host,loopback", [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True),
    ("0:0:0:0:0:0:0:1", True), ("localhost", True), ("0.0.0.0", False), ("::", False),
    ("10.1.2.3", False), ("LOCALHOST", False), ("localhost.", False),
    ("127.0.0.1.example.org", False), ("::ffff:127.0.0.1", False), ("", False)])
def test_which_binds_need_a_token(host: str, loopback: bool, tmp_path: Path) -> None:
    assert is_loopback(host) is loopback
    none = TokenStore(tmp_path / "tokens.json")
    if loopback:
        check_binding(host, None, none)
        hosts = loopback_names(host)
        assert {"127.0.0.1", "localhost", "[::1]"} <= set(hosts)
        assert all("evil" not in h for h in hosts)
    else:
        with pytest.raises(ConfigError, match="needs a bearer token"):
            check_binding(host, None, none)
        check_binding(host, TOKEN, none)


@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.1.example.org"])
def test_non_loopback_needs_a_token(store: Path, host: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SEDIMENT_TOKEN"}
    p = subprocess.run([zygote.script(SEDIMENT), "serve", "--transport", "http", "--host", host,
                        "--port", "0", "--dir", str(store), "--embedder", "hash"],
                       capture_output=True, text=True, timeout=30, env=env,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 1 and "needs a bearer token" in p.stderr, (host, p.stderr)


def test_initialize_answers_before_the_model_loads(store: Path) -> None:
    """With the default MiniLM embedder, the handshake and tools/list do not wait."""
    params = StdioServerParameters(command=zygote.script(SEDIMENT),
                                   args=["serve", "--dir", str(store), "--embedder", "minilm"],
                                   env=dict(os.environ))

    async def main() -> float:
        with anyio.fail_after(TIMEOUT):
            start = anyio.current_time()
            async with Client(params) as client:
                await client.list_tools()
                elapsed = anyio.current_time() - start
                r = await client.call_tool("agents_search", {"query": "billing"})
                assert r.is_error and "active embedder" in r.content[0].text
                return float(elapsed)

    elapsed = anyio.run(main)
    assert elapsed < 20


@pytest.mark.parametrize("workers,writes", [(2, 150)])
def test_two_servers_writing_at_once_lose_nothing(store: Path, workers: int,
                                                  writes: int) -> None:
    async def agent(n: int) -> None:
        async with Client(stdio_params(store, "--no-warm-up")) as client:
            for i in range(writes):
                r = await client.call_tool("agents_context_write", {
                    "content": f"worker {n} note {i}", "kind": "note", "confidence": 0.5,
                    "scope": "local"})
                assert not r.is_error, r.content

    async def main() -> None:
        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                for n in range(workers):
                    tg.start_soon(agent, n)

    anyio.run(main)
    f = LayerFile.open(store / "AGENTS.local.db")
    assert f.validate() == []
    notes = [c for c in f.chunks() if c.kind == "note"]
    assert sorted(c.content for c in notes) == sorted(
        f"worker {n} note {i}" for n in range(workers) for i in range(writes))
    written = {s for c in f.chunks() if c.kind == "meta.write" for s in c.sources}
    assert written == {c.id for c in notes}  # each write's actor recorded in its commit
    assert len(set(f.ids.tolist())) == 2 * workers * writes

"""The HTTP server fails closed (issue 26): tokens, sign-in, Host and Origin, a real server."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import run_sediment
from tests.mcp.conftest import HttpServer, make_store, start_http, stop

ACCEPT = {"Accept": "application/json, text/event-stream"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


def sediment(*args: str) -> str:
    p = run_sediment(*args, cwd=Path.cwd(), env=dict(os.environ), timeout=60)
    assert p.code == 0, p.err
    return p.out


def create_token(actor: str, role: str) -> tuple[str, str]:
    out = json.loads(sediment("token", "create", "--actor", actor, "--role", role, "--json"))
    return str(out["token"]), str(out["id"])


def base_of(server: HttpServer) -> str:
    return server.url.removesuffix("/mcp")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[HttpServer, str, str]]:
    """A loopback server without a shared token, started while one actor token exists."""
    secret, tid = create_token("alice", "reviewer")
    server = start_http(make_store(tmp_path / "store"), "--no-warm-up", token=None)
    yield server, secret, tid
    stop(server.process)


def search(base: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(f"{base}/tools/agents_search", json={"query": "layer precedence"},
                      headers=headers, timeout=30)


def csrf_of(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m is not None
    return m.group(1)


def test_revoking_the_last_token_keeps_the_server_closed(
        served: tuple[HttpServer, str, str]) -> None:
    """Issue 26 item 1: after the last token was revoked (or the file emptied), writes
    without a token answered 200 and the page stopped asking for one."""
    server, secret, tid = served
    base = base_of(server)
    assert search(base).status_code == 401
    assert search(base, secret).status_code == 200
    sediment("token", "revoke", tid)
    assert sediment("token", "list", "--json").count('"id"') == 0
    for attempt in (search(base), search(base, secret),
                    httpx.post(server.url, json=INIT, headers=ACCEPT, timeout=30),
                    httpx.post(f"{base}/tools/agents_context_write", timeout=30, json={
                        "content": "written without a token", "kind": "note"})):
        assert attempt.status_code == 401, attempt.text
    with httpx.Client(base_url=base, timeout=30) as c:
        form = c.get("/ui/login").text
        assert 'name="token"' in form
        r = c.post("/ui/login", data={"csrf": csrf_of(form), "reviewer": "mallory"},
                   headers={"Origin": base})
    assert r.status_code == 401 and "Wrong token" in r.text
    Path(os.environ["SEDIMENT_USER_CONFIG"]).parent.joinpath("tokens.json").write_text(
        '{"version": 1, "tokens": []}')
    assert search(base).status_code == 401
    assert server.process.poll() is None


def test_a_server_off_loopback_refuses_everything_once_its_tokens_are_gone(
        tmp_path: Path) -> None:
    """Issue 26 item 1: a non-loopback server with no valid token refuses every request."""
    secret, tid = create_token("alice", "writer")
    server = start_http(make_store(tmp_path / "store"), "--no-warm-up", token=None,
                        host="0.0.0.0")
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert search(base, secret).status_code == 200
        sediment("token", "revoke", tid)
        for path in ("/health", "/tools/list", "/openapi.json"):
            assert httpx.get(base + path, timeout=30).status_code == 401, path
        assert search(base).status_code == 401
        assert search(base, secret).status_code == 401
    finally:
        stop(server.process)


def test_a_name_alone_signs_in_as_a_writer_who_cannot_decide(tmp_path: Path) -> None:
    """Issue 26 item 5: on a loopback server without tokens a name gave the admin role."""
    server = start_http(make_store(tmp_path / "store"), "--no-warm-up", token=None)
    try:
        base = base_of(server)
        with httpx.Client(base_url=base, timeout=30) as c:
            form = c.get("/ui/login").text
            assert 'name="token"' not in form
            r = c.post("/ui/login", data={"csrf": csrf_of(form), "reviewer": "agent"},
                       headers={"Origin": base})
            assert r.status_code == 303
            queue = c.get("/ui/queue")
            assert queue.status_code == 200
            decide = c.post("/ui/decide", data={"csrf": csrf_of(queue.text),
                                                "only": "accept:1"}, headers={"Origin": base})
        assert decide.status_code == 403 and "reviewer role" in decide.text
    finally:
        stop(server.process)


FORGED_HOSTS = ["127.0.0.1:{port}@evil.example", "127.0.0.1:{port}.evil.example",
                "localhost:{port}:{port}", "127.0.0.1:{port} evil", "evil.example:{port}"]


@pytest.mark.parametrize("path", ["/mcp", "/health", "/ui/login"])
def test_one_host_rule_for_every_endpoint(tmp_path: Path, path: str) -> None:
    """Issue 26 item 16: ``Host: 127.0.0.1:P@evil.example`` passed on /mcp, and LOCALHOST
    was 421 on the API but 200 on /ui. Every endpoint now parses the header whole."""
    server = start_http(make_store(tmp_path / "store"), "--no-warm-up", token=None)
    try:
        base = base_of(server)
        port = server.port

        def call(headers: dict[str, str]) -> httpx.Response:
            if path == "/mcp":
                return httpx.post(base + path, json=INIT, timeout=30,
                                  headers={**ACCEPT, **headers})
            return httpx.get(base + path, timeout=30, headers=headers)

        for forged in FORGED_HOSTS:
            r = call({"Host": forged.format(port=port)})
            assert r.status_code == 421, (path, forged, r.status_code)
            assert r.json()["error"]["code"] == "misdirected"
        for origin in (f"http://127.0.0.1:{port}@evil.example", "http://evil.example",
                       f"http://localhost:{port}/x", "null"):
            r = call({"Origin": origin})
            assert r.status_code == 403, (path, origin, r.status_code)
        for host in (f"LOCALHOST:{port}", f"127.0.0.1:{port}", f"localhost:{port}"):
            r = call({"Host": host})
            assert r.status_code == 200, (path, host, r.status_code)
    finally:
        stop(server.process)


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
def test_deeply_nested_json_is_a_json_error(api: httpx.Client, depth: int) -> None:
    """Issue 26 item 9 (HTTP): nesting 1,000 deep was a plain-text 500."""
    nested = "[" * depth + "]" * depth
    for path, body in (("/tools/agents_search", f'{{"query": "x", "k": {nested}}}'),
                       ("/agents/onboarding/prompt", f'{{"arguments": {nested}}}')):
        r = api.post(path, content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 400, (path, r.status_code, r.text[:200])
        assert r.json()["error"] == {"code": "bad_request", "message":
                                     "the body nests arrays and objects more than 64 deep"}
    r = api.post("/mcp", content=f'{{"jsonrpc": "2.0", "id": 1, "method": "ping", '
                                 f'"params": {{"x": {nested}}}}}',
                 headers={**ACCEPT, "Content-Type": "application/json"})
    assert r.headers["content-type"].startswith("application/json"), r.text[:200]
    assert "error" in r.json(), r.text[:200]


def test_nesting_just_inside_the_limit_is_read(api: httpx.Client) -> None:
    nested = "[" * 62 + "]" * 62
    r = api.post("/tools/agents_search", content=f'{{"query": "x", "k": {nested}}}',
                 headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "k" in r.json()["error"]["message"]
    assert "deep" not in r.json()["error"]["message"]

"""The MCP authorization flow end to end: a real OpenID provider (oidc-provider, Node), the
real ``sediment serve --transport http`` over layer files and over PostgreSQL, and the
official MCP SDK client obtaining its access token from the provider (client credentials
with a resource indicator) after the server's 401 pointed it at the Protected Resource
Metadata."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import anyio
import httpx
import pytest
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from mcp import Client
from tests import zygote
from tests.auth.oidc import SECRETS, Provider
from tests.conftest import SEDIMENT
from tests.mcp.conftest import make_store
from tests.pg.team import TeamServer, seed_project, serve_http

TIMEOUT = 120
MEMORY = {"content": "Deploys pause during the December freeze", "category": "convention"}


class Storage:
    """Tokens kept in memory, as a fresh client would start."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def oidc_env(provider: Provider, home: Path) -> dict[str, str]:
    """The server's environment: the identity provider, and its own config and data."""
    return {"SEDIMENT_OIDC_ISSUER": provider.issuer,
            "SEDIMENT_OIDC_ACTOR_CLAIM": "preferred_username",
            "SEDIMENT_OIDC_WEB_CLIENT_ID": "sediment-web",
            "SEDIMENT_USER_CONFIG": str(home / "config.toml"),
            "SEDIMENT_TOKENS_FILE": str(home / "tokens.json"),
            "SEDIMENT_DATA_DIR": str(home / "data"),
            "SEDIMENT_CACHE_DIR": str(home / "cache")}


async def _sdk(url: str, provider: Provider, client: str,
               calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, Any]]:
    auth = ClientCredentialsOAuthProvider(
        server_url=url, storage=Storage(), client_id=client, client_secret=SECRETS[client],
        scope="sediment:reader sediment:writer", issuer=provider.issuer)
    out = []
    with anyio.fail_after(TIMEOUT):
        async with create_mcp_http_client(auth=auth) as http, \
                Client(streamable_http_client(url, http_client=http)) as c:
            for name, args in calls:
                r = await c.call_tool(name, args)
                text = "\n".join(getattr(x, "text", "") for x in r.content)
                out.append((not r.is_error, r.structured_content if not r.is_error else text))
    return out


def sdk(url: str, provider: Provider, client: str,
        calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, Any]]:
    """Each call's (ok, structured result or error text), over one SDK session that signed
    in through the provider."""
    return anyio.run(_sdk, url, provider, client, calls)


def post_call(url: str, token: str, tool: str, args: dict[str, Any]) -> httpx.Response:
    """One JSON-RPC ``tools/call`` as a bare HTTP request."""
    return httpx.post(url, timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": args}},
        headers={"Authorization": f"Bearer {token}",
                 "Accept": "application/json, text/event-stream"})


def api_call(srv: TeamServer, token: str, tool: str, args: dict[str, Any]) -> httpx.Response:
    """The same call through the HTTP API (no MCP session needed)."""
    return httpx.post(f"{srv.base}/tools/{tool}", json=args, timeout=30,
                      headers={"Authorization": f"Bearer {token}"})


def challenge(r: httpx.Response) -> str:
    return r.headers.get("www-authenticate", "")


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    p = Provider(tmp_path_factory.mktemp("oidc"))
    yield p
    p.stop()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def server(provider: Provider, home: Path,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    root = tmp_path_factory.mktemp("project")
    store = make_store(root / "store")
    with serve_http(["--dir", str(store)], root, oidc_env(provider, home)) as srv:
        yield srv


def test_the_metadata_names_the_provider_and_a_401_points_at_it(
        server: TeamServer, provider: Provider) -> None:
    own = f"{server.base}/.well-known/oauth-protected-resource/mcp"
    for url in (own, f"{server.base}/.well-known/oauth-protected-resource"):
        r = httpx.get(url, timeout=30)
        assert r.status_code == 200, r.text
        doc = r.json()
        assert doc["resource"] == server.mcp
        assert doc["authorization_servers"] == [provider.issuer]
        assert "sediment:writer" in doc["scopes_supported"]
    r = httpx.post(server.mcp, json={}, timeout=30)
    assert r.status_code == 401
    assert challenge(r) == f'Bearer realm="sediment", resource_metadata="{own}"'
    r = httpx.get(f"{server.base}/health", timeout=30,
                  headers={"Authorization": "Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln"})
    assert r.status_code == 401
    assert challenge(r).startswith('Bearer error="invalid_token", realm="sediment", '
                                   f'resource_metadata="{own}", error_description=')


def test_the_sdk_client_signs_in_through_the_provider_and_its_actor_is_the_claim(
        server: TeamServer, provider: Provider, home: Path) -> None:
    (saved, out), (found, recalled), (searched, hits) = sdk(server.mcp, provider, "agent", [
        ("save_memory", MEMORY),
        ("recall_memories", {"query": "December freeze"}),
        ("agents_search", {"query": "billing header", "k": 1})])
    assert saved and out["status"] == "created", out
    assert found and [m["content"] for m in recalled["memories"]] == [MEMORY["content"]]
    assert searched and hits["results"][0]["id"] == 2
    # Sediment's own tokens still work beside the provider's, and name the same actors.
    env = {**os.environ, **oidc_env(provider, home)}
    minted = subprocess.run([zygote.script(SEDIMENT),
                             "token", "create", "--actor", "agent-bot", "--role",
                             "reader", "--json"], env=env, capture_output=True, text=True,
                            timeout=60, check=True)
    own = json.loads(minted.stdout)["token"]
    r = api_call(server, own, "recall_memories", {"query": "December freeze"})
    assert r.status_code == 200, r.text
    assert [m["content"] for m in r.json()["result"]["memories"]] == [MEMORY["content"]]


def test_expired_and_wrong_audience_tokens_are_refused(server: TeamServer,
                                                       provider: Provider) -> None:
    real = provider.token("agent", server.mcp)
    assert api_call(server, real, "recall_memories", {"query": "x"}).status_code == 200
    expired = provider.resign(real, iat=1_700_000_000, exp=1_700_000_300)
    elsewhere = provider.token("agent", "http://127.0.0.1:1/mcp")
    for token, why in ((expired, "the token has expired"),
                       (elsewhere, "the token was not issued for this server (audience)")):
        r = post_call(server.mcp, token, "recall_memories", {"query": "x"})
        assert r.status_code == 401, r.text
        assert r.json()["error"] == {"code": "invalid_token", "message": why}
        assert 'error="invalid_token"' in challenge(r)


def test_a_role_change_in_the_provider_takes_effect(server: TeamServer,
                                                    provider: Provider) -> None:
    provider.grant("agent", "sediment:reader")
    try:
        token = provider.token("agent", server.mcp)
        r = post_call(server.mcp, token, "save_memory", MEMORY)
        assert r.status_code == 403, r.text
        assert challenge(r).startswith('Bearer error="insufficient_scope", realm="sediment"')
        assert 'scope="sediment:writer"' in challenge(r)
        assert r.json()["error"]["message"] == (
            "tool save_memory needs the write permission; the token's scopes grant the "
            "reader role")
        r = api_call(server, token, "recall_memories", {"query": "freeze"})
        assert r.status_code == 200, r.text
        api = api_call(server, token, "save_memory", MEMORY)
        assert api.status_code == 403 and "insufficient_scope" in challenge(api)
        # The SDK client asks the provider again (step-up) and, granted no more, gives up.
        with pytest.raises(BaseExceptionGroup) as raised:
            sdk(server.mcp, provider, "agent", [("save_memory", MEMORY)])
        assert "Server returned an error response" in repr(raised.value)
    finally:
        provider.grant("agent", "sediment:reader sediment:writer")
    (saved, out), = sdk(server.mcp, provider, "agent", [
        ("save_memory", {**MEMORY, "content": "Hotfixes skip the freeze"})])
    assert saved and out["status"] == "created", out


def test_the_team_server_over_postgresql_takes_the_providers_tokens(
        pg_url: str, tmp_path: Path, provider: Provider) -> None:
    seed_project(pg_url, tmp_path)
    with serve_http(["--store", pg_url], tmp_path, oidc_env(provider, tmp_path)) as srv:
        (saved, out), (found, recalled) = sdk(srv.mcp, provider, "agent", [
            ("save_memory", MEMORY), ("recall_memories", {"query": "December freeze"})])
        assert saved and found, (out, recalled)
        assert [m["content"] for m in recalled["memories"]] == [MEMORY["content"]]
        reader = provider.token("reader", srv.mcp)
        r = post_call(srv.mcp, reader, "save_memory", MEMORY)
        assert r.status_code == 403 and "insufficient_scope" in challenge(r)
        elsewhere = provider.token("agent", "http://127.0.0.1:1/mcp")
        assert post_call(srv.mcp, elsewhere, "recall_memories", {"query": "x"}
                         ).status_code == 401


def _submit(c: httpx.Client, page: httpx.Response, **fields: str) -> httpx.Response:
    """Fill in and send the provider's one form on ``page``."""
    m = re.search(r'<form[^>]*action="([^"]+)"', page.text)
    assert m, page.text
    hidden = dict(re.findall(r'type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
    return c.post(urljoin(str(page.url), m.group(1)), data={**hidden, **fields},
                  follow_redirects=True)


def test_the_web_page_signs_in_through_the_provider(server: TeamServer,
                                                    provider: Provider) -> None:
    with httpx.Client(timeout=30) as c:
        assert "/ui/oidc/start?next=" in c.get(f"{server.base}/ui/login").text
        r = c.get(f"{server.base}/ui/oidc/start?next=/ui/layers")
        assert r.status_code == 303
        sent = r.headers["location"]
        assert sent.startswith(f"{provider.issuer}/auth?")
        assert "code_challenge_method=S256" in sent and "resource=http" in sent
        login = c.get(sent, follow_redirects=True)
        consent = _submit(c, login, login="alice", password="anything")
        back = _submit(c, consent)
        assert back.url.path == "/ui/oidc/callback", back.text
        assert back.status_code == 200, back.text
        assert "You are signed in as alice with the reviewer role." in back.text
        assert 'content="0; url=/ui/layers"' in back.text
        page = c.get(f"{server.base}/ui/layers")
        assert page.status_code == 200 and "alice" in page.text
    with httpx.Client(timeout=30) as other:  # a callback this browser never started
        r = other.get(f"{server.base}/ui/oidc/callback?state=forged&code=x")
        assert r.status_code == 401
        assert "did not start in this browser" in r.text
        assert other.get(f"{server.base}/ui/layers").status_code == 303

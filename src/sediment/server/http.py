"""Streamable HTTP for the MCP server: bearer tokens off loopback, Origin checks on it.

Binding to a non-loopback address without a token is refused: anyone on the network could
otherwise read and write the store. On loopback the SDK's DNS-rebinding protection checks
the Host and Origin headers (a web page cannot reach a local server through a rebound
name); a token, when given, is required there too.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from sediment.auth import TokenStore
from sediment.errors import ConfigError
from sediment.server.lifecycle import ShutdownHooks
from sediment.server.principals import ActorAuth, default_tokens

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None, tokens: TokenStore | None = None) -> None:
    if not is_loopback(host) and not token and not (tokens or default_tokens()).any():
        raise ConfigError(f"serving on {host} (not loopback) needs a bearer token: pass "
                          "--token, set SEDIMENT_TOKEN, or create one with sediment token "
                          "create")
    if token is not None and len(token) < 16:
        raise ConfigError("the bearer token must be at least 16 characters")


class BearerAuth:
    """Rejects HTTP requests without ``Authorization: Bearer <token>`` with 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
        got = headers.get(b"authorization", b"")
        if not hmac.compare_digest(got, self.expected):
            body = b'{"error": "missing or wrong bearer token"}'
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"www-authenticate", b'Bearer realm="sediment"'),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def build_http_app(server: Any, *, host: str, token: str | None, path: str = "/mcp",
                   tokens: TokenStore | None = None) -> Any:
    """The streamable HTTP ASGI app behind bearer auth: the legacy token, or any actor
    token of the token file (``sediment token create``), which binds the actor."""
    tokens = tokens or default_tokens()
    check_binding(host, token, tokens)
    app = server.streamable_http_app(streamable_http_path=path, host=host)
    return ShutdownHooks(ActorAuth(app, tokens, legacy=token))

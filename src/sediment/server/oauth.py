"""The HTTP side of the MCP authorization specification, for a server that accepts access
tokens from the team's identity provider (:mod:`sediment.auth.oidc`).

It publishes the Protected Resource Metadata (RFC 9728) at
``/.well-known/oauth-protected-resource`` followed by the endpoint's path (where MCP clients
look first) and without it; it answers a missing or refused token with 401 and a
``WWW-Authenticate: Bearer`` challenge naming that document, and a token whose scopes do not
grant what a call needs with 403 ``insufficient_scope`` naming the scope that would (MCP
clients then ask the provider for it), before the tool runs. The token itself is never
passed on: tools see only the principal.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sediment.auth.oidc import Accepted, JwtVerifier, Refused
from sediment.auth.roles import allowed, tool_permission
from sediment.server.disclosure import read_body, send_error

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MAX_BODY = 4 * 1024 * 1024
"""Bodies read to find the tool a request calls; a larger one is passed on unread (the
endpoints refuse it)."""


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', "'")


class ResourceServer:
    """Metadata, challenges and scope checks for one server (see the module text)."""

    def __init__(self, verifier: JwtVerifier, mcp_path: str) -> None:
        self.verifier = verifier
        self.mcp_path = mcp_path
        s = verifier.settings
        self.metadata_url = str(build_resource_metadata_url(AnyHttpUrl(s.resource)))
        own = urlsplit(self.metadata_url).path
        self.paths = {own, WELL_KNOWN}
        self.document = ProtectedResourceMetadata.model_validate(
            {"resource": s.resource, "authorization_servers": [s.issuer],
             "scopes_supported": list(s.scopes), "resource_name": "Sediment"},
        ).model_dump_json(exclude_none=True).encode()

    def serves(self, scope: Scope) -> bool:
        return str(scope.get("path", "")) in self.paths

    async def metadata(self, scope: Scope, send: Send) -> None:
        if scope.get("method") not in ("GET", "HEAD"):
            await send_error(send, 405, "method_not_allowed", "GET the metadata document",
                             ((b"allow", b"GET, HEAD"),))
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"),
                                (b"cache-control", b"max-age=300"),
                                (b"access-control-allow-origin", b"*"),
                                (b"content-length", str(len(self.document)).encode())]})
        await send({"type": "http.response.body",
                    "body": b"" if scope.get("method") == "HEAD" else self.document})

    def challenge(self, refused: Refused | None = None) -> bytes:
        """The ``WWW-Authenticate`` value: the metadata URL, and why a token was refused."""
        parts = ['realm="sediment"', f'resource_metadata="{self.metadata_url}"']
        if refused is not None:
            parts.insert(0, f'error="{refused.error}"')
            parts.append(f'error_description="{_quoted(refused.description)}"')
            if refused.scope:
                parts.append(f'scope="{refused.scope}"')
        return ("Bearer " + ", ".join(parts)).encode()

    async def refuse(self, send: Send, refused: Refused) -> None:
        await send_error(send, refused.status, refused.error, refused.description,
                         ((b"www-authenticate", self.challenge(refused)),))

    async def call(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send,
                   accepted: Accepted) -> None:
        """Run ``app`` for a request made with an accepted access token, unless it calls a
        tool the token's role may not (403 ``insufficient_scope`` instead)."""
        path = str(scope.get("path", ""))
        api_tool = path.startswith("/tools/") and path != "/tools/list"
        if scope.get("method") != "POST" or not (path == self.mcp_path or api_tool):
            await app(scope, receive, send)
            return
        body, more = await read_body(receive, MAX_BODY)
        replay = _replay(body, more, receive)
        if more:
            await app(scope, replay, send)
            return
        try:
            data = json.loads(body or b"null")
        except ValueError:
            data = None
        calls = ([(path.removeprefix("/tools/"), data)] if api_tool
                 else _tool_calls(data))
        role = accepted.principal.role
        for name, arguments in calls:
            permission = tool_permission(name, arguments if isinstance(arguments, dict)
                                         else None)
            if not allowed(role, permission):
                need = self.verifier.settings.scope_for(permission)
                await self.refuse(send, Refused(
                    403, "insufficient_scope",
                    f"tool {name[:64]} needs the {permission.value} permission; the "
                    f"token's scopes grant the {role} role", need))
                return
        await app(scope, replay, send)


def _tool_calls(data: Any) -> list[tuple[str, Any]]:
    """The (tool, arguments) pairs of the JSON-RPC ``tools/call`` requests in a body."""
    out: list[tuple[str, Any]] = []
    for message in data if isinstance(data, list) else [data]:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            params = message.get("params")
            if isinstance(params, dict) and isinstance(params.get("name"), str):
                out.append((params["name"], params.get("arguments")))
    return out


def _replay(body: bytes, more: bool, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body already read, then the rest."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return replay

"""Who is asking: over HTTP the actor bound to the bearer token (``sediment token
create``), else the server's own actor (the workspace's, which the adapter that built it
read from the configuration: ``SEDIMENT_ACTOR`` or the OS user).

Once any token exists in the token file, every HTTP request needs a valid one, on
loopback too; the legacy single ``--token`` (``SEDIMENT_TOKEN``) still works and acts as
the server's own actor with the admin role. A request's principal travels in its ASGI
scope under ``PRINCIPAL_KEY`` to the tools, which read it from the request context.
"""

from __future__ import annotations

import hmac
import logging
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from sediment.auth import Principal
from sediment.auth.tokens import TokenCheck
from sediment.errors import ConfigError, StoreUnavailableError
from sediment.server.disclosure import mcp_message, public_message, send_error
from sediment.server.outage import answer_outage

if TYPE_CHECKING:
    from sediment.server.oauth import ResourceServer

PRINCIPAL_KEY = "sediment.principal"
CALLER: ContextVar[Principal | None] = ContextVar("sediment_caller", default=None)
"""The principal of a tool call made in-process on an HTTP request's behalf (the plain
API's ``POST /tools/{name}``), where the SDK's context carries no request."""
_log = logging.getLogger("sediment.server")


def request_principal(request: Any) -> Principal | None:
    """The principal an HTTP request was authenticated as (None over stdio)."""
    scope = getattr(request, "scope", None)
    got = scope.get(PRINCIPAL_KEY) if isinstance(scope, dict) else None
    return got if isinstance(got, Principal) else None


class ActorAuth:
    """Binds each HTTP request to the actor of its bearer token; 401 without a valid one
    whenever tokens exist (or a legacy token was given). With ``oauth`` (a
    :class:`~sediment.server.oauth.ResourceServer`) every request needs a token, a JWT is
    checked against the identity provider, and Sediment's own tokens keep working. The
    legacy token acts as ``actor``, the server's own."""

    def __init__(self, app: ASGIApp, tokens: TokenCheck, *, actor: str,
                 legacy: str | None = None, oauth: ResourceServer | None = None,
                 mcp_path: str | None = None) -> None:
        self.app = app
        self.mcp_path = mcp_path
        self.tokens = tokens
        self.legacy = f"Bearer {legacy}".encode() if legacy else None
        self.actor = actor
        self.oauth = oauth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.oauth is not None:
            if self.oauth.serves(scope):
                await self.oauth.metadata(scope, send)
                return
            if await self._oauth(scope, receive, send, self.oauth):
                return
        try:
            required = self.oauth is not None or self.legacy is not None or self.tokens.any()
        except ConfigError:
            required = True
        if required:
            try:
                principal = self._principal(scope)
            except StoreUnavailableError as exc:
                if scope.get("method") == "POST" and self.mcp_path is not None \
                        and scope.get("path", "").rstrip("/") == self.mcp_path.rstrip("/"):
                    await answer_outage(scope, receive, send, mcp_message(exc))
                else:
                    await send_error(send, 503, "unavailable", public_message(exc))
                return
            if principal is None:
                challenge = (self.oauth.challenge() if self.oauth is not None
                             else b'Bearer realm="sediment"')
                await send_error(send, 401, "unauthorized", "missing or wrong bearer token",
                                 ((b"www-authenticate", challenge),))
                return
            scope[PRINCIPAL_KEY] = principal
        await self.app(scope, receive, send)

    async def _oauth(self, scope: Scope, receive: Receive, send: Send,
                     oauth: ResourceServer) -> bool:
        """Answer a request bearing a JWT (True), else leave it to Sediment's tokens."""
        from sediment.auth.oidc import IdentityProviderError, Refused, looks_like_jwt

        headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
        got = headers.get(b"authorization", b"")
        if got[:7].lower() != b"bearer ":
            return False
        token = got[7:].decode("ascii", "replace").strip()
        if not looks_like_jwt(token):
            return False
        try:
            outcome = await oauth.verifier.verify(token)
        except IdentityProviderError as exc:
            _log.warning("%s", exc)
            await send_error(send, 503, "unavailable", "the identity provider is "
                             "unavailable; the server's log says why")
            return True
        if isinstance(outcome, Refused):
            await oauth.refuse(send, outcome)
            return True
        scope[PRINCIPAL_KEY] = outcome.principal
        # The token stops here: nothing behind this point can pass it on.
        scope["headers"] = [(k, v) for k, v in scope.get("headers") or []
                            if k.lower() != b"authorization"]
        await oauth.call(self.app, scope, receive, send, outcome)
        return True

    def _principal(self, scope: Scope) -> Principal | None:
        headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
        got = headers.get(b"authorization", b"")
        if self.legacy is not None and hmac.compare_digest(got, self.legacy):
            return Principal(self.actor, "admin")
        if not got.startswith(b"Bearer "):
            return None
        try:
            return self.tokens.verify(got[7:].decode("ascii", "replace").strip())
        except ConfigError:
            return None


def tool_principal(ctx: Any, fallback: str) -> Principal:
    """Who calls an MCP tool: the actor of the HTTP request's bearer token (the MCP
    request's, else the API request's in :data:`CALLER`), else ``fallback`` (the server's
    own actor over stdio, or on a server without tokens) as a writer."""
    request = None
    if ctx is not None:
        try:
            request = ctx.request_context.request
        except (ValueError, AttributeError):
            request = None
    return request_principal(request) or CALLER.get() or Principal(fallback, "writer")

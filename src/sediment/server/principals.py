"""Who is asking: the actor over stdio (OS user or ``SEDIMENT_ACTOR``), and over HTTP the
actor bound to the bearer token (``sediment token create``); where actors' own stores live
and the memory dedup threshold they are read with.

Once any token exists in the token file, every HTTP request needs a valid one, on
loopback too; the legacy single ``--token`` (``SEDIMENT_TOKEN``) still works and acts as
the server's own actor with the admin role. A request's principal travels in its ASGI
scope under ``PRINCIPAL_KEY`` to the tools, which read it from the request context.
"""

from __future__ import annotations

import getpass
import hmac
import logging
import os
import re
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs
from starlette.types import ASGIApp, Receive, Scope, Send

from sediment.auth import Principal, TokenStore
from sediment.auth.tokens import TokenCheck
from sediment.context import ContextSettings
from sediment.errors import ConfigError, StoreUnavailableError
from sediment.memory import DEFAULT_DEDUP_THRESHOLD
from sediment.server.disclosure import mcp_message, public_message, send_error
from sediment.server.outage import answer_outage
from sediment.workspace import Places

if TYPE_CHECKING:
    from sediment.server.oauth import ResourceServer

PRINCIPAL_KEY = "sediment.principal"
CALLER: ContextVar[Principal | None] = ContextVar("sediment_caller", default=None)
"""The principal of a tool call made in-process on an HTTP request's behalf (the plain
API's ``POST /tools/{name}``), where the SDK's context carries no request."""
_BAD = re.compile(r"[^A-Za-z0-9_.-]")
_log = logging.getLogger("sediment.server")


def default_actor(env: Mapping[str, str] | None = None) -> str:
    """``SEDIMENT_ACTOR`` if set, else the OS user (characters an actor name cannot hold
    become ``-``)."""
    env = os.environ if env is None else env
    if env.get("SEDIMENT_ACTOR"):
        return env["SEDIMENT_ACTOR"]
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        user = "user"
    name = _BAD.sub("-", user).lstrip("._-")[:40]
    return name or "user"


def token_path(env: Mapping[str, str] | None = None) -> Path:
    """``SEDIMENT_TOKENS_FILE``, else ``tokens.json`` beside the user config file."""
    env = os.environ if env is None else env
    if env.get("SEDIMENT_TOKENS_FILE"):
        return Path(env["SEDIMENT_TOKENS_FILE"])
    if env.get("SEDIMENT_USER_CONFIG"):
        return Path(env["SEDIMENT_USER_CONFIG"]).parent / "tokens.json"
    return Path(platformdirs.user_config_dir("sediment")) / "tokens.json"


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where actors' own stores live: ``SEDIMENT_DATA_DIR``, else the platform data dir."""
    env = os.environ if env is None else env
    if env.get("SEDIMENT_DATA_DIR"):
        return Path(env["SEDIMENT_DATA_DIR"])
    return Path(platformdirs.user_data_dir("sediment"))


def memory_threshold(env: Mapping[str, str] | None = None) -> float:
    """The dedup threshold: ``SEDIMENT_MEMORY_DEDUP``, else the default."""
    env = os.environ if env is None else env
    if not env.get("SEDIMENT_MEMORY_DEDUP"):
        return DEFAULT_DEDUP_THRESHOLD
    try:
        return float(env["SEDIMENT_MEMORY_DEDUP"])
    except ValueError:
        raise ConfigError(f"SEDIMENT_MEMORY_DEDUP={env['SEDIMENT_MEMORY_DEDUP']!r} is not a "
                          "number") from None


def places(env: Mapping[str, str] | None = None, context: ContextSettings | None = None,
           session: str | None = None) -> Places:
    """Where a workspace keeps actors' own data, read from the environment
    (``SEDIMENT_DATA_DIR``, ``SEDIMENT_MEMORY_DEDUP``) and the ``[context]`` settings."""
    got = Places(data_dir(env), memory_threshold(env), context or ContextSettings())
    return got if session is None else replace(got, session=session)


def default_tokens() -> TokenStore:
    return TokenStore(token_path())


def request_principal(request: Any) -> Principal | None:
    """The principal an HTTP request was authenticated as (None over stdio)."""
    scope = getattr(request, "scope", None)
    got = scope.get(PRINCIPAL_KEY) if isinstance(scope, dict) else None
    return got if isinstance(got, Principal) else None


class ActorAuth:
    """Binds each HTTP request to the actor of its bearer token; 401 without a valid one
    whenever tokens exist (or a legacy token was given). With ``oauth`` (a
    :class:`~sediment.server.oauth.ResourceServer`) every request needs a token, a JWT is
    checked against the identity provider, and Sediment's own tokens keep working."""

    def __init__(self, app: ASGIApp, tokens: TokenCheck, *, legacy: str | None = None,
                 actor: str | None = None, oauth: ResourceServer | None = None,
                 mcp_path: str | None = None) -> None:
        self.app = app
        self.mcp_path = mcp_path
        self.tokens = tokens
        self.legacy = f"Bearer {legacy}".encode() if legacy else None
        self.actor = actor or default_actor()
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

"""Who may use the page: sign-in with the server's token, sessions, CSRF, Host and Origin.

The page uses the same secret as the HTTP API (the bearer token); a browser proves it once
through the sign-in form (or the one-time link ``sediment ui`` prints) and then carries an
opaque session id in an HttpOnly, SameSite=Strict cookie. Sessions live in memory (a
restart signs everyone out), bounded in number and age. Each session has its own CSRF token
that every form carries back.

Tokens are the API's: an actor token (``sediment token create``) signs in as its actor
with its role, and its actor is the reviewer's name, proven by the token. The server's
shared token (``--token``) signs in as the server's own actor with the admin role, as it
does on the MCP endpoint; the name is then what the person types (or ``sediment ui
--reviewer``), declared, not proven, like a git author. Without any token (a loopback
server started without one and no token file, as the API allows) the form asks only for
the name and signs in with the writer role, what the MCP endpoint gives any caller there;
deciding needs a token or the one-time link. The name is recorded in each decision so
reviewers can tell theirs apart. Sessions are capped per actor, so one actor signing in
again and again ends only its own oldest sessions.
"""

from __future__ import annotations

import functools
import hmac
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response

from sediment.auth import ROLES, Principal
from sediment.auth.tokens import TokenCheck, TokenInfo
from sediment.errors import ConfigError, StoreUnavailableError

COOKIE = "sediment_session"
LOGIN_COOKIE = "sediment_login"
SESSION_SECONDS = 12 * 3600
LINK_SECONDS = 15 * 60
MAX_SESSIONS = 4096
MAX_PER_ACTOR = 32
OPEN_ROLE = "writer"
"""The role of a name-only sign-in on a server without tokens: what its MCP endpoint gives
any caller there. Deciding proposals needs a token or the one-time link."""
MAX_LINKS = 16
MAX_NAME = 64
_TOKEN_ID = re.compile(r"^sdm_([0-9a-f]{8})_")


@dataclass(slots=True)
class Session:
    id: str
    reviewer: str
    actor: str
    """Whose memories and context items the pages show."""
    role: str
    """What the session may do (``sediment.auth.ROLES``)."""
    csrf: str
    expires: float
    token_id: str | None = None
    """The actor token signed in with: revoking it ends the session."""
    flash: list[tuple[str, str]] = field(default_factory=list)
    """Messages for the next page: (level, text), level ``ok`` or ``error``."""


def clean_name(raw: str) -> str | None:
    """A reviewer name: printable, one line, 1 to 64 characters; None if unusable."""
    name = " ".join(raw.split())
    if not name or len(name) > MAX_NAME or not name.isprintable():
        return None
    return name


class Tokens(TokenCheck, Protocol):
    """What the page needs of a token store: the token file's or the team database's."""

    def list(self) -> list[TokenInfo]:
        ...


class Sessions:
    """Sign-ins, sessions and one-time links for one server (thread-safe)."""

    def __init__(self, token: str | None, tokens: Tokens | None = None,
                 actor: str = "user") -> None:
        self.token = token
        self.tokens = tokens
        self.actor = actor
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._links: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def needs_token(self) -> bool:
        """A token is asked for whenever the MCP endpoint asks for one."""
        if self.token is not None:
            return True
        try:
            return self.tokens is not None and self.tokens.any()
        except (ConfigError, StoreUnavailableError):
            return True

    def authenticate(self, token: str) -> tuple[Principal, str | None] | None:
        """(who ``token`` signs in as, the id of the actor token that proves the actor's
        name, or None for the shared token), or None when it is not accepted."""
        if self.tokens is not None:
            try:
                got = self.tokens.verify(token.strip())
            except ConfigError:
                got = None
            m = _TOKEN_ID.match(token.strip())
            if got is not None and m is not None:
                return got, m.group(1)
        if self.token is not None and hmac.compare_digest(token.encode("utf-8", "replace"),
                                                          self.token.encode()):
            return Principal(self.actor, "admin"), None
        if not self.needs_token:
            return Principal(self.actor, OPEN_ROLE), None
        return None

    def _revoked(self, token_id: str) -> bool:
        try:
            return self.tokens is None or all(t.id != token_id or t.expired()
                                              for t in self.tokens.list())
        except ConfigError:
            return True
        except StoreUnavailableError:
            return False  # the database is down: the page's next read says so

    def open(self, principal: Principal, reviewer: str,
             token_id: str | None = None) -> Session:
        """A new session; the actor's oldest one ends when it has ``MAX_PER_ACTOR``, so one
        actor signing in again and again never signs anyone else out."""
        now = time.monotonic()
        with self._lock:
            for sid in [s for s, v in self._sessions.items() if v.expires < now]:
                del self._sessions[sid]
            own = [sid for sid, v in self._sessions.items() if v.actor == principal.actor]
            for sid in own[:max(0, len(own) - MAX_PER_ACTOR + 1)]:
                del self._sessions[sid]
            while len(self._sessions) >= MAX_SESSIONS:
                self._sessions.popitem(last=False)
            s = Session(secrets.token_urlsafe(32), reviewer, principal.actor, principal.role,
                        secrets.token_urlsafe(32), now + SESSION_SECONDS, token_id)
            self._sessions[s.id] = s
            return s

    def issue_link(self, reviewer: str) -> str:
        """A code for ``/ui/signin/CODE`` that signs in once, within 15 minutes, as the
        server's own actor (the link is printed to whoever started the server)."""
        code = secrets.token_urlsafe(32)
        with self._lock:
            self._purge_links()
            while len(self._links) >= MAX_LINKS:
                self._links.popitem(last=False)
            self._links[code] = (reviewer, time.monotonic() + LINK_SECONDS)
        return code

    def _purge_links(self) -> None:
        now = time.monotonic()
        for code in [c for c, (_, until) in self._links.items() if until < now]:
            del self._links[code]

    def redeem(self, code: str) -> Session | None:
        """The session a link's code opens, once; any string is merely not a code (compared
        as UTF-8 bytes: ``compare_digest`` refuses non-ASCII str)."""
        got = code.encode("utf-8", "replace")
        with self._lock:
            self._purge_links()
            found = next((k for k in self._links if hmac.compare_digest(k.encode(), got)),
                         None)
            entry = self._links.pop(found) if found is not None else None
        if entry is None:
            return None
        return self.open(Principal(self.actor, "admin"), entry[0])

    def get(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        with self._lock:
            s = self._sessions.get(sid)
            if s is None or s.expires < time.monotonic():
                return None
        if s.token_id is not None and self._revoked(s.token_id):
            self.end(s.id)
            return None
        return s

    def end(self, sid: str) -> None:
        with self._lock:
            self._sessions.pop(sid, None)


def allowed(session: Session, role: str) -> bool:
    """Whether the session's role includes ``role`` (an unknown role includes nothing)."""
    return session.role in ROLES and ROLES.index(session.role) >= ROLES.index(role)


Handler = Callable[..., Awaitable[Response]]


def guarded_page(role: str = "reader", *, form: bool = False
                 ) -> Callable[[Handler], Handler]:
    """A page handler (a method of the :class:`WebUI` or of a group of pages holding it as
    ``ui``) called with the request's session once it may do what ``role`` allows, else
    answered with the sign-in form or 403; with ``form``, also with the form a POST sent
    (None for a GET), answered with 403 when its CSRF token is missing or stale."""

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def guarded(self: Any, request: Request, **options: Any) -> Response:
            ui = getattr(self, "ui", self)
            session = ui._guard(request, role)
            if not isinstance(session, Session):
                return session  # type: ignore[no-any-return]
            if not form:
                return await handler(self, request, session, **options)
            sent = await ui._posted(request, session) if request.method == "POST" else None
            if isinstance(sent, Response):
                return sent
            return await handler(self, request, session, sent, **options)

        return guarded

    return decorate


def csrf_ok(expected: str, got: object) -> bool:
    return isinstance(got, str) and hmac.compare_digest(expected.encode(),
                                                      got.encode("utf-8", "replace"))


def same_origin(origin: str | None, host: str, scheme: str) -> bool:
    """Whether a request that changes state comes from the page's own origin (or the
    browser does not say where it came from); the Host itself passes the rule of every
    endpoint (:mod:`sediment.server.hosts`) first."""
    return origin is None or origin.lower() == f"{scheme}://{host}".lower()

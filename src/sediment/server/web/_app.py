"""The web page's ASGI app: routes, templates, sign-in, CSRF and security headers.

Mounted at ``/ui`` beside the MCP endpoint by :func:`sediment.server.build_http_app`.
Every page is rendered on the server (Jinja2, autoescaped) and readable without
JavaScript; ``static/ui.js`` only adds keyboard navigation through the queue. Pages are
listed in :data:`NAV`; the memories and progressive context pages live in
:mod:`._personal` (they show the signed-in actor's own data).

Roles are the API's (``sediment.auth.ROLES``): every page needs ``reader``, deciding a
proposal ``reviewer``, changing one's own memories ``writer`` (a global memory,
shared by everyone, ``reviewer``).
"""

from __future__ import annotations

import secrets
import threading
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sediment.auth.tokens import FailClosed
from sediment.context import ContextLoop
from sediment.errors import SedimentError, StoreUnavailableError
from sediment.format.visible import visible as show_escaped
from sediment.memory import MemoryService
from sediment.ops.requests import SearchOptions, parse
from sediment.review import SourceLines
from sediment.search import MAX_K
from sediment.server.disclosure import public_message
from sediment.server.hosts import policy_for
from sediment.server.http import is_loopback
from sediment.server.web import _personal as personal
from sediment.server.web import _reviewing as reviewing
from sediment.server.web import _views as views
from sediment.server.web._auth import (
    COOKIE,
    LOGIN_COOKIE,
    SESSION_SECONDS,
    Session,
    Sessions,
    allowed,
    clean_name,
    csrf_ok,
    guarded_page,
    same_origin,
)
from sediment.server.web._oidc import STATE_COOKIE, STATE_SECONDS, SignInFailed, WebSignIn
from sediment.workspace import Workspace

PREFIX = "/ui"
NAV = [("queue", "Review queue"), ("layers", "Layers and diff"), ("search", "Search"),
       ("memories", "Memories"), ("context", "Progressive context")]
"""(route name, title) of each page in the navigation, in order."""
MAX_FORM_FIELDS = 1000
MAX_BODY = 1_000_000
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")


def visible(text: object) -> str:
    """Control, bidirectional and invisible characters (other than newline and tab) shown
    as escapes, never sent raw (``sediment.format.visible``, as the terminal shows them)."""
    return show_escaped(str(text), keep_lines=True)


def _env() -> Environment:
    env = Environment(loader=PackageLoader("sediment.server.web", "templates"),
                      autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["visible"] = visible
    env.filters["when"] = views.when
    return env


class WebUI:
    """The page for one server: its workspace, its sessions, where sources are read.

    The workspace gives the search, memory and context services the MCP tools use, the
    tokens the MCP endpoint authenticates with (so a token signs in here as the actor it
    is there), and the server's own actor; ``actor`` names another for the sign-in link
    and the shared token (``sediment ui --actor``).
    """

    def __init__(self, workspace: Workspace, *, token: str | None, root: Path,
                 host: str, pubkey: Path | None = None, actor: str | None = None,
                 sources: SourceLines | None = None,
                 oidc: WebSignIn | None = None) -> None:
        self.workspace = workspace
        self.service = workspace.service
        self.oidc = oidc
        self.sessions = Sessions(token, workspace.tokens, actor or workspace.actor)
        self._build = threading.Lock()
        self.sources = sources or SourceLines(root)
        """Reads the queue's ``path:line`` sources; kept for the server's life (its cache)."""
        self.pubkey = pubkey
        self.hosts = policy_for(host, is_loopback(host))
        self.env = _env()
        static = Path(__file__).parent / "static"
        self.app = Starlette(routes=[
            Route(PREFIX, self.home), Route(PREFIX + "/", self.home),
            Route(PREFIX + "/login", self.login, methods=["GET", "POST"], name="login"),
            Route(PREFIX + "/logout", self.logout, methods=["POST"], name="logout"),
            Route(PREFIX + "/signin/{code}", self.signin_link),
            Route(PREFIX + "/oidc/start", self.oidc_start, name="oidc_start"),
            Route(PREFIX + "/oidc/callback", self.oidc_callback),
            *reviewing.routes(self),
            Route(PREFIX + "/layers", self.layers, name="layers"),
            Route(PREFIX + "/search", self.search, name="search"),
            *personal.routes(self),
            Mount(PREFIX + "/static", StaticFiles(directory=static), name="static"),
        ])

    # -- the ASGI entry: Host and Origin checks and security headers on everything --------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1")
                   for k, v in scope.get("headers") or []}
        host = headers.get("host", "")
        if not self.hosts.host_ok(host):
            await PlainTextResponse("unexpected Host header", 421)(scope, receive, send)
            return
        if not headers.get("content-length", "0").isdigit() or \
                int(headers.get("content-length", "0")) > MAX_BODY:
            await PlainTextResponse("request body too large", 413)(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD") and not same_origin(
                headers.get("origin"), host, scope.get("scheme", "http")):
            await PlainTextResponse("cross-origin request refused", 403)(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [(b"content-security-policy", CSP.encode()),
                         (b"x-content-type-options", b"nosniff"),
                         (b"referrer-policy", b"same-origin"),
                         (b"x-frame-options", b"DENY"),
                         (b"cache-control", b"no-store")]
                message["headers"] = list(message.get("headers", [])) + extra
            await send(message)

        await self.app(scope, receive, secured)

    def mount(self, app: ASGIApp, gate: FailClosed | None = None) -> ASGIApp:
        """``app`` with this page at ``/ui``; ``gate`` is the server's decision whether a
        token is needed, so the page asks for one exactly when the endpoints do."""
        if gate is not None:
            self.sessions.tokens = gate
        return with_ui(app, self)

    # -- helpers --------------------------------------------------------------------------
    @property
    def memory(self) -> MemoryService:
        with self._build:  # built on first use, by one request thread
            return self.workspace.memory

    @property
    def context(self) -> ContextLoop:
        with self._build:
            return self.workspace.context

    def context_of(self, actor: str) -> ContextLoop:
        """The context loop that reads ``actor``'s items: a team server's loop
        (``sediment.pg.team.TeamContextLoop``) keeps one per actor, bound to that actor in
        SQL; the file store's one loop holds everyone's, told apart by the events."""
        loop = self.context
        of = getattr(loop, "of", None)
        return of(actor) if callable(of) else loop

    def sign_in_link(self, base_url: str, reviewer: str) -> str:
        return f"{base_url.rstrip('/')}{PREFIX}/signin/{self.sessions.issue_link(reviewer)}"

    def _session(self, request: Request) -> Session | None:
        return self.sessions.get(request.cookies.get(COOKIE))

    def _render(self, request: Request, template: str, session: Session | None,
                status: int = 200, **context: Any) -> HTMLResponse:
        flash = list(session.flash) if session else []
        if session:
            session.flash.clear()
        html = self.env.get_template(template).render(
            session=session, nav=NAV, prefix=PREFIX, flash=flash,
            current=request.url.path, **context)
        return HTMLResponse(html, status)

    def _guard(self, request: Request, role: str = "reader") -> Session | Response:
        """The request's session when it may do what ``role`` allows; else the response
        to send (the sign-in form, or 403 naming the role)."""
        session = self._session(request)
        if session is None:
            return self._to_login(request)
        if not allowed(session, role):
            return self._render(request, "error.html", session, 403,
                                title="Not allowed",
                                error=f"This needs the {role} role; you are signed in as "
                                      f"{session.actor} with the {session.role} role.")
        return session

    def _failed(self, request: Request, session: Session | None,
                exc: SedimentError) -> Response:
        """A page that could not be read, answered with the status of the error table
        (``errors.py``): 503 with one line when the store is unreachable (never where it
        lives: ``public_message``), 404 for what is not there, and so on."""
        if isinstance(exc, StoreUnavailableError):
            return self._render(request, "error.html", session, 503,
                                title="Service unavailable",
                                error=public_message(exc).capitalize() + ".")
        status = exc.http_status
        title = HTTPStatus(status).phrase if status in (403, 404, 408) else None
        return self._render(request, "error.html", session, status, title=title,
                            error=public_message(exc))

    def _to_login(self, request: Request) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"{PREFIX}/login?next={quote(target)}", 303)

    async def _form(self, request: Request) -> FormData:
        return await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)

    async def _posted(self, request: Request, session: Session) -> FormData | Response:
        """The form ``session`` posted, or 403 when its CSRF token is missing or stale."""
        form = await self._form(request)
        if not csrf_ok(session.csrf, form.get("csrf")):
            return PlainTextResponse("the form's CSRF token is missing or stale; reload the "
                                     "page", 403)
        return form

    def _missing(self, request: Request, session: Session, error: str) -> Response:
        return self._render(request, "error.html", session, 404, title="Not found",
                            error=error)

    @staticmethod
    def _set_session(response: Response, request: Request, session: Session) -> None:
        response.set_cookie(COOKIE, session.id, max_age=SESSION_SECONDS, path=PREFIX,
                            httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")

    # -- sign-in --------------------------------------------------------------------------
    async def home(self, request: Request) -> Response:
        return RedirectResponse(f"{PREFIX}/queue", 303)

    @staticmethod
    def _target(request: Request) -> str:
        target = request.query_params.get("next", "")
        if not target.startswith(PREFIX + "/") or target.startswith("//"):
            target = f"{PREFIX}/queue"
        return target

    async def login(self, request: Request) -> Response:
        target = self._target(request)
        if request.method == "GET":
            return self._login_page(request, target)
        form = await self._form(request)
        nonce = request.cookies.get(LOGIN_COOKIE, "")
        error = None
        session = None
        try:
            got = await run_in_threadpool(self.sessions.authenticate,
                                          str(form.get("token", "")))
        except StoreUnavailableError as exc:
            got, error = None, public_message(exc).capitalize() + "."
        name = clean_name(str(form.get("reviewer", "")))
        if error is not None:
            pass
        elif not nonce or not csrf_ok(nonce, form.get("csrf")):
            error = "The sign-in form expired; please try again."
        elif got is None:
            error = "Wrong token."
        elif got[1] is not None:
            session = self.sessions.open(got[0], got[0].actor, got[1])
        elif name is None:
            error = "Give your name (1 to 64 printable characters): it is recorded with " \
                    "each decision."
        else:
            session = self.sessions.open(got[0], name)
        if session is None:
            return self._login_page(request, target, error)
        done = RedirectResponse(target, 303)
        self._set_session(done, request, session)
        done.delete_cookie(LOGIN_COOKIE, path=PREFIX)
        return done

    async def signin_link(self, request: Request) -> Response:
        session = self.sessions.redeem(request.path_params["code"])
        if session is None:
            return self._render(request, "login.html", None, 401, nonce="", next="",
                                needs_token=self.sessions.needs_token,
                                error="This sign-in link was already used or has expired; "
                                      "sign in with the token instead.", link_failed=True)
        response = RedirectResponse(f"{PREFIX}/queue", 303)
        self._set_session(response, request, session)
        return response

    async def oidc_start(self, request: Request) -> Response:
        """Off to the identity provider (authorization code + PKCE)."""
        if self.oidc is None:
            return PlainTextResponse("this server has no identity provider", 404)
        target = self._target(request)
        try:
            url, state = await self.oidc.start(target)
        except SedimentError as exc:
            return self._login_page(request, target, public_message(exc))
        response = RedirectResponse(url, 303)
        # Lax, not Strict: the provider's redirect back is a cross-site navigation.
        response.set_cookie(STATE_COOKIE, state, max_age=STATE_SECONDS,
                            path=PREFIX + "/oidc", httponly=True, samesite="lax",
                            secure=request.url.scheme == "https")
        return response

    async def oidc_callback(self, request: Request) -> Response:
        """Back from the provider: the code redeemed, the token checked, a session opened.
        The page that follows is reached by a same-site navigation, so the Strict session
        cookie is sent with it."""
        if self.oidc is None:
            return PlainTextResponse("this server has no identity provider", 404)
        q = request.query_params
        try:
            accepted, target = await self.oidc.finish(
                q.get("state", ""), request.cookies.get(STATE_COOKIE, ""), q.get("code", ""),
                q.get("error", ""))
        except SignInFailed as exc:
            response = self._login_page(request, f"{PREFIX}/queue", str(exc))
        else:
            who = accepted.principal
            session = self.sessions.open(who, who.actor)
            response = self._render(request, "signed_in.html", None, target=target,
                                    actor=who.actor, role=who.role)
            self._set_session(response, request, session)
        response.delete_cookie(STATE_COOKIE, path=PREFIX + "/oidc")
        return response

    def _login_page(self, request: Request, target: str, error: str | None = None
                    ) -> Response:
        """The sign-in form (401 with ``error``) and the nonce its CSRF field must match."""
        nonce = secrets.token_urlsafe(24)
        response = self._render(request, "login.html", None, 200 if error is None else 401,
                                nonce=nonce, next=target, error=error,
                                needs_token=self.sessions.needs_token,
                                provider=self.oidc is not None)
        response.set_cookie(LOGIN_COOKIE, nonce, max_age=3600, path=PREFIX, httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")
        return response

    async def logout(self, request: Request) -> Response:
        session = self._session(request)
        form = await self._form(request)
        if session is not None and csrf_ok(session.csrf, form.get("csrf")):
            self.sessions.end(session.id)
        response = RedirectResponse(f"{PREFIX}/login", 303)
        response.delete_cookie(COOKIE, path=PREFIX)
        return response

    # -- pages ----------------------------------------------------------------------------
    @guarded_page()
    async def layers(self, request: Request, session: Session) -> Response:
        page = views.page_number(request.query_params.get("page"))
        ls = self.service.store
        try:
            rows = await run_in_threadpool(views.layers, ls, self.pubkey, session.actor)
            report = await run_in_threadpool(views.diff, ls)
        except SedimentError as exc:
            return self._failed(request, session, exc)
        if not allowed(session, "writer"):
            for row in rows:  # a reader sees no file path or connection details
                row["path"] = None
        changes = [] if report is None else list(report.chunks)
        pg = views.Page(page, views.PER_PAGE * 2, len(changes))
        return self._render(request, "layers.html", session, rows=rows, report=report,
                            changes=pg.slice(changes), page=pg, file_only=views.FILE_ONLY)

    @guarded_page()
    async def search(self, request: Request, session: Session) -> Response:
        q = request.query_params
        query = q.get("q", "")
        mode = q.get("mode", "hybrid")
        kinds = [k.strip() for k in q.get("kinds", "").split(",") if k.strip()]
        chosen = q.getlist("layer")
        page = views.page_number(q.get("page"))
        form = {"q": query, "mode": mode, "kinds": q.get("kinds", ""), "layers": chosen}
        result: dict[str, Any] | None = None
        error = None
        pg = None
        if query:
            size = views.PER_PAGE
            k = min(MAX_K, page * size)
            try:
                params = parse(SearchOptions, {
                    "query": query, "k": k, "mode": mode,
                    "filters": {"kind": kinds} if kinds else None,
                    "layers": chosen or None, "explain": True})
                result = await run_in_threadpool(self.service.search, params, session.actor)
            except SedimentError as exc:
                error = public_message(exc)
            else:
                hits = result["results"]
                more = len(hits) == k and k < MAX_K
                pg = views.Page(page, size, len(hits) + (1 if more else 0))
                result["shown"] = hits[pg.start:pg.start + size]
        links = None
        if pg is not None:
            base = [("q", query), ("mode", mode), ("kinds", form["kinds"])]
            base += [("layer", x) for x in chosen]
            links = {n: f"{PREFIX}/search?" + urlencode([*base, ("page", str(n))])
                     for n in (pg.number - 1, pg.number + 1)}
        return self._render(request, "search.html", session, form=form, result=result,
                            error=error, page=pg, links=links)


def with_ui(app: ASGIApp, ui: WebUI) -> ASGIApp:
    """``app`` with ``/ui`` (and everything under it) answered by the page instead."""

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == PREFIX or path.startswith(PREFIX + "/"):
            await ui(scope, receive, send)
        else:
            await app(scope, receive, send)

    return route

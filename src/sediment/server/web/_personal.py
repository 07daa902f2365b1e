"""The signed-in actor's own pages: memories (list, history, edit, forget, forget all) and
progressive context (items by lifecycle state and usefulness, the latest iterations).

Every call passes the session's actor to the memory or context service, which is what
keeps another actor's private memories and items out of the page. Changing a memory is a
human's change (``human=True``, as ``sediment memory`` does): a new version supersedes the
old one, and forgetting is an event; both need the ``writer`` role, and a global memory
(shared by everyone) the ``reviewer`` role.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from sediment.errors import NotFoundError, SedimentError, ValidationError
from sediment.memory import CATEGORIES
from sediment.memory.service import MAX_LIST_LIMIT
from sediment.server.disclosure import public_message
from sediment.server.web import _memories as memories
from sediment.server.web import _progress as progress
from sediment.server.web import _views as views
from sediment.server.web._auth import Session, allowed, guarded_page

if TYPE_CHECKING:
    from sediment.server.web._app import WebUI

PREFIX = "/ui"


def routes(ui: WebUI) -> list[Route]:
    pages = Personal(ui)
    return [
        Route(PREFIX + "/memories", pages.listing, name="memories"),
        Route(PREFIX + "/memories/forget-all", pages.forget_all, methods=["GET", "POST"]),
        Route(PREFIX + "/memories/{ref}", pages.memory),
        Route(PREFIX + "/memories/{ref}/edit", pages.edit, methods=["POST"]),
        Route(PREFIX + "/memories/{ref}/forget", pages.forget, methods=["GET", "POST"]),
        Route(PREFIX + "/context", pages.context, name="context"),
    ]


class Personal:
    def __init__(self, ui: WebUI) -> None:
        self.ui = ui

    def _may_change(self, session: Session, memory: dict[str, Any]) -> bool:
        return allowed(session, "reviewer" if memory["scope"] == "global" else "writer")

    # -- memories -------------------------------------------------------------------------
    @guarded_page()
    async def listing(self, request: Request, session: Session) -> Response:
        flt = memories.Filter.of(request.query_params)
        page = views.page_number(request.query_params.get("page"))
        try:
            got = await run_in_threadpool(memories.listing, self.ui.memory, session.actor,
                                          flt, page)
        except SedimentError as exc:
            return self.ui._failed(request, session, exc)
        keep = flt.query()
        base = f"{PREFIX}/memories?" + (urlencode(keep) + "&" if keep else "")
        return self.ui._render(request, "memories.html", session, got=got, flt=flt,
                               categories=CATEGORIES, scopes=memories.SCOPES, base=base,
                               can_write=allowed(session, "writer"))

    @guarded_page()
    async def memory(self, request: Request, session: Session) -> Response:
        ref = request.path_params["ref"]
        try:
            shown = await run_in_threadpool(self.ui.memory.show, session.actor, ref)
        except (NotFoundError, ValidationError) as exc:
            return self.ui._missing(request, session, public_message(exc))
        except SedimentError as exc:
            return self.ui._failed(request, session, exc)
        m = shown["memory"]
        return self.ui._render(request, "memory.html", session, shown=shown, m=m,
                               status_of=memories.status, categories=CATEGORIES,
                               can_change=self._may_change(session, m)
                               and memories.status(m) == "current")

    async def _current(self, request: Request, session: Session
                       ) -> dict[str, Any] | Response:
        """The memory named in the path, when the session may change it."""
        try:
            shown = await run_in_threadpool(self.ui.memory.show, session.actor,
                                            request.path_params["ref"])
        except (NotFoundError, ValidationError) as exc:
            return self.ui._missing(request, session, public_message(exc))
        m: dict[str, Any] = shown["memory"]
        if not self._may_change(session, m):
            role = "reviewer" if m["scope"] == "global" else "writer"
            return self.ui._render(request, "error.html", session, 403, title="Not allowed",
                                   error=f"Changing memory {m['id']} needs the {role} role; "
                                         f"you have the {session.role} role.")
        return m

    @guarded_page("writer", form=True)
    async def edit(self, request: Request, session: Session, form: FormData) -> Response:
        m = await self._current(request, session)
        if isinstance(m, Response):
            return m
        updates: dict[str, Any] = {"content": str(form.get("content", "")),
                                   "category": str(form.get("category", ""))}
        raw = str(form.get("confidence", "")).strip()
        try:
            updates["confidence"] = float(raw) if raw else m["confidence"]
        except ValueError:
            updates["confidence"] = raw
        try:
            out = await run_in_threadpool(self.ui.memory.update, session.actor, m["id"],
                                          updates, human=True)
        except SedimentError as exc:
            session.flash.append(("error", f"Memory {m['id']} was not changed: {exc}"))
            return RedirectResponse(f"{PREFIX}/memories/{m['id']}", 303)
        session.flash.append(("ok", f"Saved memory {out['id']}, a new version of "
                                    f"{out['superseded_id']}."))
        return RedirectResponse(f"{PREFIX}/memories/{out['id']}", 303)

    @guarded_page("writer", form=True)
    async def forget(self, request: Request, session: Session, form: FormData | None
                     ) -> Response:
        if form is None:
            m = await self._current(request, session)
            if isinstance(m, Response):
                return m
            if memories.status(m) != "current":
                return self.ui._missing(request, session, f"memory {m['id']} is "
                                                       f"{memories.status(m)}")
            return self.ui._render(request, "forget.html", session, m=m)
        m = await self._current(request, session)
        if isinstance(m, Response):
            return m
        try:
            await run_in_threadpool(lambda: self.ui.memory.delete(
                session.actor, m["id"], human=True, reason="forgotten in the web page"))
        except SedimentError as exc:
            session.flash.append(("error", f"Memory {m['id']} was not forgotten: {exc}"))
        else:
            session.flash.append(("ok", f"Forgot memory {m['id']}."))
        return RedirectResponse(f"{PREFIX}/memories", 303)

    @guarded_page("writer", form=True)
    async def forget_all(self, request: Request, session: Session, form: FormData | None
                         ) -> Response:
        if form is None:
            try:
                got = await run_in_threadpool(self.ui.memory.list_memories, session.actor,
                                              None, MAX_LIST_LIMIT)
            except SedimentError as exc:
                return self.ui._render(request, "error.html", session, 500,
                                       error=public_message(exc))
            mine = [m for m in got["memories"]
                    if m["scope"] in ("user", "project") and not m.get("pending")]
            return self.ui._render(request, "forget_all.html", session, count=len(mine))
        if form.get("confirm") != "yes":
            session.flash.append(("error", "Nothing was forgotten: tick the box to confirm."))
            return RedirectResponse(f"{PREFIX}/memories/forget-all", 303)
        try:
            out = await run_in_threadpool(lambda: self.ui.memory.forget_all(
                session.actor, True, human=True))
        except SedimentError as exc:
            session.flash.append(("error", public_message(exc)))
        else:
            n = out["forgotten"]
            session.flash.append(("ok", f"Forgot {n} memor{'y' if n == 1 else 'ies'} "
                                        "(user and project scope)."))
        return RedirectResponse(f"{PREFIX}/memories", 303)

    # -- progressive context --------------------------------------------------------------
    @guarded_page()
    async def context(self, request: Request, session: Session) -> Response:
        q = request.query_params
        state = q.get("state") if q.get("state") in progress.STATES else None
        page = views.page_number(q.get("page"))
        try:
            got = await run_in_threadpool(lambda: progress.progress(
                self.ui.context_of(session.actor), session.actor, q.get("project"), state,
                page))
        except SedimentError as exc:
            return self.ui._failed(request, session, exc)
        keep = [(k, v) for k, v in (("project", got.project), ("state", state)) if v]
        base = f"{PREFIX}/context?" + (urlencode(keep) + "&" if keep else "")
        return self.ui._render(request, "context.html", session, got=got, state=state,
                               states=progress.STATES, base=base)

"""The review queue, a page per proposal, and decisions (one, a selection, or everything a
filter selects), each confirmed before anything is appended.

The queue is :mod:`._review`'s snapshot filtered and sorted by GET parameters, so a
filtered view is a link. A decision is two steps: the form posts without ``confirm`` and
the page answers with what will happen (how many proposals, which ones); only the
confirmation's ``confirm=yes`` appends. A batch over a filter carries the filter and the
count the reviewer saw; if the filter selects a different number by then, nothing is
written and the new count is shown to confirm again. After a decision the next proposal
(in the same filter and order) gets the focus. A reviewer who loses a race gets the page
back with what they typed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from sediment.errors import NotFoundError, SedimentError
from sediment.format import Chunk
from sediment.review import (
    AlreadyDecided,
    ChunkReport,
    Outcome,
    accept,
    accept_edited,
    get_proposal,
    inspect_stored,
    reject,
)
from sediment.server.disclosure import public_message
from sediment.server.web import _markup as markup
from sediment.server.web import _review as review
from sediment.server.web import _views as views
from sediment.server.web._auth import Session, allowed, guarded_page
from sediment.store import LayerName

if TYPE_CHECKING:
    from sediment.server.web._app import WebUI

PREFIX = "/ui"
MAX_BATCH = 1000
MAX_EDIT = 200_000
"""Characters a reviewer may edit in the page (a longer text is accepted or rejected as is)."""
ACTIONS = {"accept": "Accept", "reject": "Reject", "edit": "Accept with your edits"}


def routes(ui: WebUI) -> list[Route]:
    pages = Reviewing(ui)
    return [
        Route(PREFIX + "/queue", pages.queue, name="queue"),
        Route(PREFIX + "/proposals/{pid}", pages.proposal, name="proposal"),
        Route(PREFIX + "/decide", pages.decide, methods=["POST"], name="decide"),
    ]


def _query(flt: review.Filters, **extra: str | int) -> str:
    items = [*flt.items(), *((k, str(v)) for k, v in extra.items())]
    return ("?" + urlencode(items)) if items else ""


def _pid(raw: str) -> int | None:
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 19 else None


class Reviewing:
    def __init__(self, ui: WebUI) -> None:
        self.ui = ui
        self.cache = review.Queue()

    def _snapshot(self) -> review.Snapshot:
        return self.cache.snapshot(self.ui.service.store)

    # -- the queue ------------------------------------------------------------------------
    @guarded_page()
    async def queue(self, request: Request, session: Session) -> Response:
        q = request.query_params
        flt = review.Filters.of(q)
        try:
            snap = await run_in_threadpool(self._snapshot)
        except SedimentError as exc:
            return self.ui._failed(request, session, exc)
        rows = flt.apply(snap.rows)
        pg = views.Page(views.page_number(q.get("page")), review.PER_PAGE, len(rows))
        pg = views.Page(min(pg.number, pg.count), pg.size, pg.total)
        focus = _pid(q.get("focus", ""))
        return self.ui._render(
            request, "queue.html", session, rows=pg.slice(rows), page=pg, flt=flt,
            total=len(snap.rows), facets=review.facets(snap.rows), sorts=review.SORTS,
            ages=[("1h", "Last hour"), ("24h", "Last day"), ("7d", "Last week"),
                  ("old", "Older than a week")],
            query=_query(flt), base=f"{PREFIX}/queue" + _query(flt) + ("&" if flt.items()
                                                                      else "?"),
            focus=focus, age=review.age, can_decide=allowed(session, "reviewer"))

    # -- one proposal ---------------------------------------------------------------------
    def _details(self, pid: int, flt: review.Filters, actor: str) -> dict[str, Any]:
        ls = self.ui.service.store
        snap = self._snapshot()
        row = snap.by_id.get(pid)
        view = get_proposal(ls, pid) if row is None else None
        if row is None:
            assert view is not None
            facts = review.Facts()
            chunk = view.chunk
            row = review.Row(pid, view.context_id,
                             review.title_of(chunk.content) if chunk else "(gone)",
                             chunk.kind if chunk else "?", view.actor or "unknown",
                             view.from_layer, view.proposed_at_ms,
                             chunk.confidence if chunk else 0.0, chunk, facts, str(pid))
        name = next((n for n in (LayerName.DELTA, LayerName.LOCAL)
                     if ls.present([n]) and ls.chunk(n, row.context_id) is not None), None)
        cached = view is None  # a pending proposal: the snapshot's events are current
        report = (inspect_stored(ls, name, row.context_id, lines=self.ui.sources,
                                 viewer=actor, events=snap.events if cached else None,
                                 states=snap.states if cached else None)
                  if name is not None else None)
        text = row.chunk.content if row.chunk else ""
        diffs = [(f"Overrides the {n.value} version", c, markup.word_diff(c.content, text))
                 for n, c in row.facts.overrides if c.content != text]
        diffs += [(f"{m.type.capitalize()} in {m.layer.value} (similarity "
                   f"{m.similarity or 0:.3f})", m.other, markup.word_diff(m.other.content, text))
                  for m in row.facts.matches]
        if view is not None and view.status == "accepted":
            kept = ls.chunk(LayerName.USER, row.context_id) if ls.present(
                [LayerName.USER]) else None
            if kept is not None and kept.content != text:
                diffs.insert(0, ("Accepted with the reviewer's edits", kept,
                                 markup.word_diff(text, kept.content)))
        corrects = self._corrected(report, text, actor)
        if corrects is not None:
            diffs.insert(0, corrects)
        same = [n.value for n, c in row.facts.overrides if c.content == text]
        ordered = flt.apply(snap.rows)
        before, after = None, None
        ids = [r.proposal_id for r in ordered]
        if pid in ids:
            i = ids.index(pid)
            before = ordered[i - 1] if i else None
            after = ordered[i + 1] if i + 1 < len(ordered) else None
        return {"row": row, "view": view, "report": report, "diffs": diffs, "same": same,
                "rendered": markup.markdown(text), "before": before, "after": after,
                "editable": len(text) <= MAX_EDIT}

    def _corrected(self, report: ChunkReport | None, text: str, actor: str
                   ) -> tuple[str, Chunk, Any] | None:
        """A global-memory proposal that corrects a global memory: that memory, to show
        beside it (its save recorded which), read as the reviewer, so a memory they may not
        read or one since forgotten is left out."""
        handle = next((e.data.get("corrects") for e in (report.events if report else ())
                       if e.data.get("event") == "propose" and e.data.get("corrects")), None)
        if not isinstance(handle, str):
            return None
        try:
            shown = self.ui.memory.show(actor, handle)["memory"]
        except SedimentError:
            return None
        old = Chunk(int(shown["chunk_id"]), f"memory.{shown['category']}", shown["content"],
                    "human", float(shown["confidence"]), 0)
        return (f"Corrects the global memory {handle}", old,
                markup.word_diff(old.content, text))

    @guarded_page()
    async def proposal(self, request: Request, session: Session, *, reason: str = "",
                       edit: str | None = None, status: int = 200, error: str | None = None
                       ) -> Response:
        pid = _pid(str(request.path_params.get("pid", "")))
        flt = review.Filters.of(request.query_params)
        if pid is None:
            return self.ui._missing(request, session, "A proposal id is a number.")
        try:
            got = await run_in_threadpool(self._details, pid, flt, session.actor)
        except NotFoundError:
            return self.ui._missing(request, session, f"There is no proposal {pid}.")
        except SedimentError as exc:
            return self.ui._failed(request, session, exc)
        return self.ui._render(request, "proposal.html", session, status, **got, flt=flt,
                               query=_query(flt), age=review.age, reason=reason, edit=edit,
                               error=error, can_decide=allowed(session, "reviewer"))

    # -- decisions ------------------------------------------------------------------------
    @guarded_page("reviewer", form=True)
    async def decide(self, request: Request, session: Session, form: FormData) -> Response:
        flt = review.Filters.of({k: str(v) for k, v in form.items()})
        action = str(form.get("action", ""))
        reason = str(form.get("reason", ""))
        only = str(form.get("only", ""))  # ``accept:ID``: one row's own button
        if only:
            action, _, one = only.partition(":")
            reason = str(form.get(f"reason-{one}", "")) or reason
        origin = _pid(str(form.get("from", "")))
        back = (f"{PREFIX}/proposals/{origin}" if origin is not None else f"{PREFIX}/queue"
                ) + _query(flt)
        try:
            snap = await run_in_threadpool(self._snapshot)
        except SedimentError as exc:
            return self.ui._failed(request, session, exc)
        ordered = flt.apply(snap.rows)
        if str(form.get("scope", "")) == "filter":
            ids = [r.proposal_id for r in ordered]
            expected = _pid(str(form.get("expect", "")))
        else:
            raw = [one] if only else [str(v) for v in form.getlist("proposal")]
            ids = [i for v in raw if (i := _pid(v)) is not None]
            expected = None if len(ids) == len(raw) else -1
        if action not in ACTIONS or not ids or expected == -1:
            session.flash.append(("error", "Select at least one proposal, then accept or "
                                           "reject."))
            return RedirectResponse(back, 303)
        if len(ids) > MAX_BATCH:
            session.flash.append(("error", f"At most {MAX_BATCH} proposals at once; narrow "
                                           "the filter."))
            return RedirectResponse(back, 303)
        if action == "edit" and len(ids) != 1:
            session.flash.append(("error", "Edits apply to one proposal at a time."))
            return RedirectResponse(back, 303)
        if action == "reject" and not reason.strip():
            if origin is not None:
                return await self._again(request, origin, form, 400,
                                         "A rejection needs a reason, so the agent and later "
                                         "reviewers know why.")
            session.flash.append(("error", "A rejection needs a reason, so the agent and "
                                           "later reviewers know why."))
            return RedirectResponse(back, 303)
        changed = expected is not None and expected != len(ids)
        if str(form.get("confirm", "")) != "yes" or changed:
            rows = [snap.by_id[i] for i in ids if i in snap.by_id]
            return self.ui._render(
                request, "confirm.html", session, action=action, label=ACTIONS[action],
                ids=ids, rows=rows[:20], more=max(0, len(ids) - 20), reason=reason,
                content=str(form.get("content", "")), scope=str(form.get("scope", "")),
                flt=flt, origin=origin, changed=changed and expected, back=back)
        following = review.next_after(ordered, set(ids))
        try:
            outcomes = await run_in_threadpool(self._apply, snap, action, ids, reason,
                                               str(form.get("content", "")), session)
        except AlreadyDecided as exc:
            message = (f"Proposal {exc.proposal_id} was already decided by {exc.decided_by} "
                       f"({exc.status}); nothing was written.")
            if origin is not None:
                return await self._again(request, origin, form, 409, message)
            session.flash.append(("error", message))
            return RedirectResponse(back, 303)
        except SedimentError as exc:
            if origin is not None:
                return await self._again(request, origin, form, exc.http_status,
                                         public_message(exc))
            session.flash.append(("error", public_message(exc)))
            return RedirectResponse(back, 303)
        self._report(session, outcomes)
        if origin is not None and following is not None:
            return RedirectResponse(f"{PREFIX}/proposals/{following.proposal_id}"
                                    + _query(flt), 303)
        focus = {"focus": following.proposal_id} if following is not None else {}
        return RedirectResponse(f"{PREFIX}/queue" + _query(flt, **focus), 303)

    def _apply(self, snap: review.Snapshot, action: str, ids: list[int], reason: str,
               content: str, session: Session) -> list[Outcome]:
        """Decide, then settle the queue's snapshot with what was written (see
        :meth:`._review.Queue.settle`)."""
        ls = self.ui.service.store
        edited = None
        if action == "edit":
            vector = self.ui.service.embedder.embed([content.strip()])[0]
            outcomes = [accept_edited(ls, ids[0], content, vector, reason,
                                      reviewer=session.reviewer)]
            edited = (content.strip(), vector)
        else:
            decide = accept if action == "accept" else reject
            outcomes = decide(ls, ids, reason, reviewer=session.reviewer)
        copies = []
        for o in outcomes:
            row = snap.by_id.get(o.proposal_id or -1)
            if not (o.copied and row is not None and row.chunk is not None):
                continue
            stored = self.cache.vector(row.context_id)
            text, vec = edited if edited is not None else (row.chunk.content, stored)
            if vec is not None:
                copies.append((replace(row.chunk, content=text, author="human"), vec))
        self.cache.settle(ls, snap.mark, set(ids), sum(1 for o in outcomes if o.changed),
                          copies)
        return outcomes

    async def _again(self, request: Request, pid: int, form: FormData, status: int,
                     error: str) -> Response:
        """The proposal's page again, with the reason and edits the reviewer typed."""
        request.scope["path_params"] = {"pid": str(pid)}
        edit = str(form.get("content")) if form.get("action") == "edit" else None
        return await self.proposal(request, reason=str(form.get("reason", "")), edit=edit,
                                   status=status, error=error)

    @staticmethod
    def _report(session: Session, outcomes: list[Outcome]) -> None:
        done = [o for o in outcomes if o.changed]
        if len(done) > 3:
            verb = done[0].action
            session.flash.append(("ok", f"{verb.capitalize()} {len(done)} proposals."))
        else:
            for o in done:
                session.flash.append(("ok", o.message[0].upper() + o.message[1:] + "."))
        for o in outcomes:
            if not o.changed:
                session.flash.append(("error", f"Proposal {o.proposal_id} was already "
                                               f"decided by {o.decided_by} ({o.action}); "
                                               "nothing changed."))

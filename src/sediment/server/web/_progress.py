"""What the progressive context page shows: the signed-in actor's context items of one
project by lifecycle state and usefulness, and the latest iterations.

States and usefulness are the context service's own (``state_of`` and
``ranking.usefulness`` over the fold of the store's events, as ``get_context_stats`` and
``get_relevant_context`` compute them); the page only groups, orders and pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sediment.context import ContextLoop, state_of
from sediment.context.ranking import usefulness
from sediment.context.state import ITEM_EVENT, fold
from sediment.server.web._views import PER_PAGE, Page

STATES = ("active", "aging", "summarized", "archived")
LATEST = 10


@dataclass(frozen=True, slots=True)
class Progress:
    projects: list[tuple[str, int]]
    """Every project the actor has items in, with how many."""
    project: str | None
    by_state: dict[str, int]
    hidden: dict[str, int]
    """Items left out of retrieval: ``superseded`` (summarised) and ``forgotten`` (pruned)."""
    items: list[dict[str, Any]]
    page: Page
    iterations: list[dict[str, Any]]


def progress(loop: ContextLoop, actor: str, project: str | None, state: str | None,
             page: int, size: int = PER_PAGE) -> Progress:
    """The actor's items of ``project`` (default: this server's, else the first with
    items), filtered by ``state``, best first: by lifecycle state, then usefulness."""
    events = loop.store.events()
    f = fold(events)
    stored = {i.chunk.id: i for i in loop.store.items(archived=True)}
    project_of = {e.data.get("item"): str(e.data.get("project") or "")
                  for e in events if e.kind == ITEM_EVENT}
    projects: dict[str, int] = {}
    for st in f.items.values():
        if st.actor == actor and st.id in stored:
            name = project_of.get(st.id, "")
            projects[name] = projects.get(name, 0) + 1
    if project not in projects:
        project = loop.project if loop.project in projects else next(iter(sorted(projects)),
                                                                     None)
    rows: list[dict[str, Any]] = []
    by_state = dict.fromkeys(STATES, 0)
    hidden = {"superseded": 0, "forgotten": 0}
    for st in f.items.values():
        if st.actor != actor or project_of.get(st.id, "") != project:
            continue
        if st.hidden:
            hidden[st.hidden] = hidden.get(st.hidden, 0) + 1
            continue
        item = stored.get(st.id)
        if item is None:
            continue
        age = f.current(st.actor, st.run_id) - st.iteration
        lifecycle = state_of(st, age, item.archived, loop.settings)
        by_state[lifecycle] = by_state.get(lifecycle, 0) + 1
        rows.append({"id": f"c{st.id}", "n": st.id, "type": st.type, "state": lifecycle,
                     "content": item.chunk.content, "run_id": st.run_id,
                     "iteration": st.iteration, "age": age, "tags": st.tags,
                     "usefulness": usefulness(st.helpful, st.unhelpful),
                     "helpful": st.helpful, "unhelpful": st.unhelpful,
                     "summary_of": [f"c{s}" for s in st.summary_of],
                     "success": st.metadata.get("success")})
    latest = sorted((r for r in rows if r["type"] == "iteration"),
                    key=lambda r: (r["iteration"], r["n"]), reverse=True)[:LATEST]
    chosen = [r for r in rows if state is None or r["state"] == state]
    order = {s: i for i, s in enumerate(STATES)}
    chosen.sort(key=lambda r: (order.get(r["state"], len(STATES)), -r["usefulness"], -r["n"]))
    pg = Page(min(page, max(1, -(-len(chosen) // size))), size, len(chosen))
    return Progress(sorted(projects.items()), project, by_state, hidden, pg.slice(chosen), pg,
                    latest)

"""Context state as a fold over events.

Event kinds (``files.EVENT_PREFIX`` + suffix) and their JSON content:

- ``meta.context_item``: one per stored item, in the same commit: ``{"event": "store",
  "item": N, "actor", "project", "run_id", "iteration", "type", "tags", "metadata",
  "embedded", "summary_of": [ids]}``; sources ``[N]``.
- ``meta.context_feedback``: ``{"event": "feedback", "item": N, "actor", "helpful",
  "reason", "query", "iteration"}``; sources ``[N]``. ``query`` (optional, up to 500
  characters) is the request the item helped with: such a vote counts, at ranking, in
  proportion to how similar the current query is to it (``ranking.query_weight``);
  without one it counts for every query. ``iteration`` is the item's run's iteration when
  the vote was given (a vote fades with the iterations since, ``ranking.vote_decay``);
  events written before it existed take the run's iteration at their place in the log.
- ``meta.context_use``: access counts since the last write: ``{"event": "use",
  "uses": {"<id>": [count, last accessed ms]}}``; sources the ids (``uses.py``).
- ``meta.supersede`` (shared): a summary replaces an original: ``{"old_id", "new_id",
  "reason": "summary"}``; ``meta.forget`` (shared): a prune: ``{"context_id", "reason"}``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sediment.context.files import EVENT_PREFIX
from sediment.context.store import StoredEvent
from sediment.store.events import FORGET, SUPERSEDE

ITEM_EVENT = EVENT_PREFIX + "_item"
FEEDBACK_EVENT = EVENT_PREFIX + "_feedback"
USE_EVENT = EVENT_PREFIX + "_use"
DEFAULT_RUN = "default"
RUN_ID_PATTERN = r"^[A-Za-z0-9_.:-]+$"
"""What a run id may be (at most 100 characters), on every path (the MCP tools' request
models, the command line, the Python API): an id stored under another spelling could not
be named over MCP."""
HIDES = {SUPERSEDE: ("old_id", "superseded"), FORGET: ("context_id", "forgotten")}
"""The events that hide an item: the key naming it, and why it is hidden."""


@dataclass(slots=True)
class ItemState:
    id: int
    actor: str
    run_id: str
    iteration: int
    type: str
    tags: list[str]
    metadata: dict[str, Any]
    embedded: bool
    summary_of: list[int]
    helpful: int = 0
    unhelpful: int = 0
    """``helpful`` and ``unhelpful`` count every vote, with or without a query (prune,
    skills and stats count them all)."""
    queried: int = 0
    """How many of the helpful votes named a query."""
    plain: list[tuple[bool, int]] = field(default_factory=list)
    """The votes that named no query: (helpful, iteration given)."""
    hidden: str = ""
    """Why search leaves it out: ``superseded`` (summarised) or ``forgotten`` (pruned)."""
    access_count: int = 0
    last_accessed_ms: int = 0


@dataclass(slots=True)
class Fold:
    items: dict[int, ItemState] = field(default_factory=dict)
    runs: dict[tuple[str, str], int] = field(default_factory=dict)
    """(actor, run_id) -> the latest iteration seen."""
    hidden: set[int] = field(default_factory=set)
    """Ids of the items superseded or forgotten."""
    votes: dict[str, list[tuple[int, bool, int]]] = field(default_factory=dict)
    """Query -> the (item, helpful, iteration given) votes that named it, in commit
    order."""

    def current(self, actor: str, run_id: str) -> int:
        return self.runs.get((actor, run_id), 0)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def fold(events: Iterable[StoredEvent], into: Fold | None = None) -> Fold:
    """Apply ``events`` (in commit order) to ``into`` (a new, empty state by default)."""
    out = Fold() if into is None else into
    for e in events:
        d = e.data
        if e.kind == ITEM_EVENT:
            item = _int(d.get("item"))
            if item is None:
                continue
            st = ItemState(item, str(d.get("actor", "")), str(d.get("run_id", DEFAULT_RUN)),
                           _int(d.get("iteration")) or 0, str(d.get("type", "")),
                           [str(t) for t in d.get("tags") or []],
                           meta if isinstance(meta := d.get("metadata"), dict) else {},
                           bool(d.get("embedded", True)),
                           [s for s in d.get("summary_of") or [] if _int(s) is not None])
            out.items[item] = st
            key = (st.actor, st.run_id)
            out.runs[key] = max(out.runs.get(key, 0), st.iteration)
        elif e.kind == FEEDBACK_EVENT:
            got = out.items.get(_int(d.get("item")) or -1)
            if got is not None:
                good = d.get("helpful") is True
                query = d.get("query")
                when = _int(d.get("iteration"))
                when = out.current(got.actor, got.run_id) if when is None else when
                if isinstance(query, str) and query:
                    out.votes.setdefault(query, []).append((got.id, good, when))
                    got.queried += good
                else:
                    got.plain.append((good, when))
                if good:
                    got.helpful += 1
                else:
                    got.unhelpful += 1
        elif e.kind == USE_EVENT:
            uses = d.get("uses")
            for key, value in (uses.items() if isinstance(uses, dict) else ()):
                got = out.items.get(int(key)) if str(key).isdigit() else None
                if (got is not None and isinstance(value, list) and len(value) == 2
                        and _int(value[0]) is not None and _int(value[1]) is not None):
                    got.access_count += value[0]
                    got.last_accessed_ms = max(got.last_accessed_ms, value[1])
        elif e.kind in HIDES:
            field_name, why = HIDES[e.kind]
            got = out.items.get(_int(d.get(field_name)) or -1)
            if got is not None:
                got.hidden = why
                out.hidden.add(got.id)
    return out

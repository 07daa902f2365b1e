"""What the memories page shows, from the memory service the MCP tools and ``sediment
memory`` call (``list_memories``, ``show``, ``update``, ``delete``, ``forget_all``).

Every call names the signed-in actor: the service gives an actor only their own user and
project memories (and the shared global ones), so the page cannot show another actor's.
Nothing here decides anything: it filters, counts and pages.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from sediment.memory import CATEGORIES, MemoryService
from sediment.memory.service import MAX_LIST_LIMIT
from sediment.server.web._views import PER_PAGE, Page

SCOPES = ("user", "project", "global")


@dataclass(frozen=True, slots=True)
class Filter:
    category: str | None
    context: str | None
    scope: str | None

    @classmethod
    def of(cls, params: Any) -> Filter:
        """Unknown values are dropped, not errors: a stale link still shows the page."""
        cat = params.get("category") or None
        scope = params.get("scope") or None
        ctx = params.get("context") or None
        return cls(cat if cat in CATEGORIES else None,
                   ctx[:100] if isinstance(ctx, str) else None,
                   scope if scope in SCOPES else None)

    def query(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in (("category", self.category), ("context", self.context),
                                    ("scope", self.scope)) if v]


@dataclass(frozen=True, slots=True)
class Listing:
    memories: list[dict[str, Any]]
    page: Page
    total: int
    """Every memory shown to the actor, before the filter."""
    by_category: list[tuple[str, int]]
    contexts: list[dict[str, Any]]
    """The actor's contexts, each with ``memories`` (how many of them it holds)."""
    uncategorised: int
    """Memories in no context."""


def listing(mem: MemoryService, actor: str, flt: Filter, page: int,
            size: int = PER_PAGE) -> Listing:
    """The actor's current memories (and global proposals awaiting review), most used
    first, filtered by category, context and scope, one page of them."""
    out = mem.list_memories(actor, None, MAX_LIST_LIMIT, flt.scope)
    rows: list[dict[str, Any]] = out["memories"]
    counts = Counter(m["category"] for m in rows)
    held = Counter(m["context"] for m in rows if m["context"] is not None)
    merged: dict[str, dict[str, Any]] = {}
    for c in mem.contexts(actor)["contexts"]:
        merged.setdefault(c["name"], {**c, "memories": held[c["name"]]})
    for name, n in held.items():
        merged.setdefault(name, {"name": name, "scope": "", "description": "",
                                 "priority": None, "memories": n})
    chosen = [m for m in rows
              if (flt.category is None or m["category"] == flt.category)
              and (flt.context is None or m["context"] == flt.context)]
    pg = Page(min(page, max(1, -(-len(chosen) // size))), size, len(chosen))
    return Listing(pg.slice(chosen), pg, len(rows),
                   [(c, counts[c]) for c in CATEGORIES if counts[c]],
                   sorted(merged.values(), key=lambda c: (-float(c["priority"] or 0),
                                                          str(c["name"]))),
                   sum(1 for m in rows if m["context"] is None))


def status(m: dict[str, Any]) -> str:
    """One word for where a version stands."""
    if m.get("forgotten"):
        return "forgotten"
    if m.get("superseded_by"):
        return f"superseded by {m['superseded_by']}"
    if m.get("pending"):
        return "pending review"
    return "current"

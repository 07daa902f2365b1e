"""What a memory is: categories, sources, scopes, actors, ids, and how they map to chunks.

A memory is a chunk (RFC 7.1) whose kind is ``memory.<category>.<actor>``: the category and
the owning actor are in the kind so the search engine's kind filter gives each actor a view
of only their own memories, without a post-filter. Everything else that a chunk's fields
cannot hold lives in ``meta.memory*`` events (``sediment.memory.events``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sediment.errors import ValidationError

CATEGORIES = ("preference", "pattern", "correction", "fact", "instruction", "convention")
SOURCES = {"explicit": 1.0, "corrected": 0.9, "inferred": 0.7}
"""How a memory was learned, and the confidence that gives it."""
DEFAULT_SOURCE = "inferred"
KIND_PREFIX = "memory."
ACTOR_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
_REF_RE = re.compile(r"^([up])([1-9][0-9]{0,9})$")
MAX_CONTENT_CHARS = 10_000


class Scope(StrEnum):
    USER = "user"
    PROJECT = "project"
    GLOBAL = "global"


def check_actor(actor: object) -> str:
    if not isinstance(actor, str) or not ACTOR_RE.match(actor):
        raise ValidationError(
            f"actor {actor!r} is invalid: use 1-40 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit")
    return actor


def check_category(value: object, field_name: str = "category") -> str:
    if value not in CATEGORIES:
        raise ValidationError(f"{field_name} {value!r} is unknown: use one of "
                              f"{', '.join(CATEGORIES)}")
    return str(value)


def check_source(value: object) -> str:
    if not isinstance(value, str) or value not in SOURCES:
        raise ValidationError(f"source {value!r} is unknown: use one of "
                              f"{', '.join(SOURCES)}")
    return str(value)


def check_scope(value: object, allowed: tuple[Scope, ...] = tuple(Scope)) -> Scope:
    names = ", ".join(s.value for s in allowed)
    try:
        scope = Scope(value)  # type: ignore[arg-type]
    except ValueError:
        raise ValidationError(f"scope {value!r} is unknown: use one of {names}") from None
    if scope not in allowed:
        raise ValidationError(f"scope {scope.value!r} is not allowed here: use one of {names}")
    return scope


def check_content(value: object, field_name: str = "content") -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{field_name} must be a non-empty string")
    if len(value) > MAX_CONTENT_CHARS:
        raise ValidationError(f"{field_name} has {len(value)} characters; a memory holds at "
                              f"most {MAX_CONTENT_CHARS} (save one fact per memory)")
    return value.strip()


def memory_kind(category: str, actor: str) -> str:
    return f"{KIND_PREFIX}{category}.{actor}"


def parse_kind(kind: str) -> tuple[str, str] | None:
    """(category, actor) of a memory kind, or None for any other kind."""
    if not kind.startswith(KIND_PREFIX):
        return None
    category, sep, actor = kind[len(KIND_PREFIX):].partition(".")
    if not sep or category not in CATEGORIES or not ACTOR_RE.match(actor):
        return None
    return category, actor


def actor_kinds(actor: str, categories: tuple[str, ...] = CATEGORIES) -> tuple[str, ...]:
    return tuple(memory_kind(c, actor) for c in categories)


@dataclass(frozen=True, slots=True, order=True)
class MemoryRef:
    """A memory's address: a store prefix and the chunk id in that store. The tools show
    the owner's handle instead when it has one (``Memory.shown``); ``parse`` reads both
    forms, and the service resolves a handle to the memory."""

    store: str
    id: int

    def __str__(self) -> str:
        return f"{self.store}{self.id}"

    @classmethod
    def parse(cls, value: object, field_name: str = "memory_id") -> MemoryRef:
        m = _REF_RE.match(value.strip()) if isinstance(value, str) else None
        if m is None:
            raise ValidationError(
                f"{field_name} {value!r} is not a memory id: ids look like 'u12' (your "
                "user memories) or 'p34' (this project's), as recall and list show them")
        return cls(m.group(1), int(m.group(2)))


@dataclass(slots=True)
class Memory:
    """A memory as the tools show it: the chunk joined with the fold of its events."""

    ref: MemoryRef
    content: str
    category: str
    actor: str
    scope: Scope
    source: str
    confidence: float
    created_at_ms: int
    author: str
    context: str | None = None
    related_to: list[str] = field(default_factory=list)
    use_count: int = 0
    last_used_ms: int | None = None
    supersedes: MemoryRef | None = None
    superseded_by: MemoryRef | None = None
    forgotten: bool = False
    pending: bool = False
    score: float | None = None
    label: str | None = None
    """Its handle as its owner sees it (``u3``); None: shown by its chunk id."""
    supersedes_label: str | None = None
    superseded_by_label: str | None = None
    rank: float = 0.0
    """Recall's order: hybrid relevance within the query's candidates (not shown)."""
    origin: dict[str, Any] | None = None
    """Where an imported memory came from (``sediment.interop``); None: saved here."""

    @property
    def shown(self) -> str:
        """The id the tools show: the handle, else the store prefix and chunk id."""
        return self.label or str(self.ref)

    @property
    def active(self) -> bool:
        return not (self.forgotten or self.superseded_by is not None or self.pending)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.shown, "chunk_id": self.ref.id, "content": self.content,
            "category": self.category,
            "scope": self.scope.value, "actor": self.actor, "source": self.source,
            "confidence": round(float(self.confidence), 6), "created_at_ms": self.created_at_ms,
            "author": self.author, "use_count": self.use_count,
            "last_used_ms": self.last_used_ms, "context": self.context,
            "related_to": list(self.related_to),
            "supersedes": (self.supersedes_label or str(self.supersedes))
            if self.supersedes else None,
            "superseded_by": (self.superseded_by_label or str(self.superseded_by))
            if self.superseded_by else None,
            "forgotten": self.forgotten,
        }
        if self.pending:
            out["pending"] = True
        if self.origin is not None:
            out["origin"] = self.origin
        if self.score is not None:
            out["score"] = round(self.score, 6)
        return out

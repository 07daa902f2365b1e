"""The review queue as rows a reviewer can scan, filter and sort, built once per change.

A :class:`Snapshot` holds every pending proposal as a :class:`Row`: a title, the kind, who
proposed it (the proposal event's actor), its age, confidence, and what it collides with in
base and user (same id: *overrides*; similar vectors: *near-duplicate*; either with other
content: *conflict*). :class:`Queue` keeps the snapshot for the store's high-water mark
(every append raises it), so paging, filtering and sorting read memory, and the facts of a
chunk (delta chunks never change) are computed once: a new snapshot compares only chunks it
has not seen, plus, when the user layer grew, the pending ones against user again in one
batched ``LayerStore.nearest`` (``diff_layers`` of the whole delta runs per view nowhere).
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from sediment.format import Chunk
from sediment.review import DEFAULT_THRESHOLD, Match
from sediment.review.diff import MAX_MATCHES
from sediment.store import LayerName, LayerStore
from sediment.store.events import ProposalState, is_meta_kind
from sediment.store.rules import writers

TITLE_CHARS = 90
PER_PAGE = 50
AGES = {"1h": 3_600_000, "24h": 86_400_000, "7d": 7 * 86_400_000}
"""``age=`` values: proposed within the last hour, day, week; ``old``: more than a week ago."""
SORTS = {"newest": "Newest first", "oldest": "Oldest first",
         "confidence": "Lowest confidence first", "kind": "Kind", "author": "Author"}
LOWER = (LayerName.USER, LayerName.BASE)


@dataclass(frozen=True, slots=True)
class Facts:
    """What one delta chunk collides with in base and user."""

    overrides: tuple[tuple[LayerName, Chunk], ...] = ()
    """Versions with the same id (same content included: the page says so)."""
    matches: tuple[Match, ...] = ()
    """Near-duplicates and duplicates by vector similarity, most similar first."""


@dataclass(frozen=True, slots=True)
class Row:
    """One pending proposal as the queue shows it."""

    proposal_id: int
    context_id: int
    title: str
    kind: str
    actor: str
    layer: str
    proposed_at_ms: int
    confidence: float
    chunk: Chunk | None
    facts: Facts
    short: str = ""

    @property
    def overrides(self) -> bool:
        return bool(self.facts.overrides)

    @property
    def near_duplicate(self) -> bool:
        return bool(self.facts.matches)

    @property
    def conflict(self) -> bool:
        """Something in base or user says something else about the same thing."""
        text = self.chunk.content if self.chunk else None
        return any(c.content != text for _, c in self.facts.overrides) or any(
            m.type == "near-duplicate" for m in self.facts.matches)


def title_of(text: str) -> str:
    """The first Markdown heading, else the first non-empty line, shortened."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    heading = next((ln for ln in lines if re.match(r"#{1,6}\s", ln)), None)
    first = heading or (lines[0] if lines else "(empty)")
    first = re.sub(r"^#{1,6}\s+|^[-*>]\s+", "", first).strip() or "(empty)"
    return first if len(first) <= TITLE_CHARS else first[:TITLE_CHARS - 1].rstrip() + "…"


def short_ids(ids: list[int]) -> dict[int, str]:
    """Each id's shortest decimal tail (3 digits at least) no other id shares, so
    2147483806 reads ``806`` while it is the only pending one ending so."""
    out: dict[int, str] = {}
    texts = {i: str(i) for i in ids}
    width = 3
    left = list(ids)
    while left:
        tails = Counter(texts[i][-width:] for i in left)
        still = []
        for i in left:
            tail = texts[i][-width:]
            if tails[tail] == 1 or len(tail) == len(texts[i]):
                out[i] = tail
            else:
                still.append(i)
        left, width = still, width + 1
    return out


@dataclass(slots=True)
class Snapshot:
    """Pending proposals at one high-water mark, newest first."""

    mark: int
    rows: list[Row]
    by_id: dict[int, Row] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {r.proposal_id: r for r in self.rows}


@dataclass(frozen=True, slots=True)
class Filters:
    """The queue's GET parameters, validated (anything unknown reads as no filter)."""

    kind: str = ""
    author: str = ""
    layer: str = ""
    conflict: str = ""  # "" | yes | no
    age: str = ""  # "" | 1h | 24h | 7d | old
    q: str = ""
    sort: str = "newest"

    @classmethod
    def of(cls, params: Mapping[str, str]) -> Filters:
        def pick(name: str, allowed: tuple[str, ...] | None = None) -> str:
            value = str(params.get(name, "") or "")[:200].strip()
            return value if allowed is None or value in allowed else ""

        return cls(pick("kind"), pick("author"), pick("layer", ("delta", "local")),
                   pick("conflict", ("yes", "no")), pick("age", (*AGES, "old")), pick("q"),
                   pick("sort", tuple(SORTS)) or "newest")

    def items(self) -> list[tuple[str, str]]:
        """The non-default parameters, for links and hidden form fields."""
        out = [(k, getattr(self, k)) for k in ("kind", "author", "layer", "conflict", "age",
                                                "q")]
        if self.sort != "newest":
            out.append(("sort", self.sort))
        return [(k, v) for k, v in out if v]

    @property
    def active(self) -> bool:
        return any(k != "sort" for k, _ in self.items())

    def keep(self, row: Row, now_ms: int) -> bool:
        if (self.kind and row.kind != self.kind) or (self.author and row.actor != self.author):
            return False
        if self.layer and row.layer != self.layer:
            return False
        if self.conflict and row.conflict != (self.conflict == "yes"):
            return False
        if self.age:
            age = now_ms - row.proposed_at_ms
            if (age > AGES[self.age]) if self.age in AGES else age <= AGES["7d"]:
                return False
        if self.q:
            needle = self.q.casefold().lstrip("#")
            text = row.chunk.content if row.chunk else ""
            hay = f"{row.proposal_id} {row.context_id} {row.actor} {row.kind} {text}"
            if needle not in hay.casefold():
                return False
        return True

    def apply(self, rows: list[Row], now_ms: int | None = None) -> list[Row]:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        kept = [r for r in rows if self.keep(r, now)]
        if self.sort == "oldest":
            kept.sort(key=lambda r: (r.proposed_at_ms, r.proposal_id))
        elif self.sort == "confidence":
            kept.sort(key=lambda r: (r.confidence, -r.proposed_at_ms))
        elif self.sort in ("kind", "author"):
            kept.sort(key=lambda r: (getattr(r, "kind" if self.sort == "kind" else "actor"),
                                     -r.proposed_at_ms))
        return kept


def facets(rows: list[Row]) -> dict[str, list[tuple[str, int]]]:
    """Counts of each kind, author and layer among ``rows`` (Datasette-style facets)."""
    return {name: sorted(Counter(getattr(r, attr) for r in rows).items())
            for name, attr in (("kind", "kind"), ("author", "actor"), ("layer", "layer"))}


def _lower_mark(ls: LayerStore) -> tuple[int, ...]:
    return tuple((s.chunks if (s := ls.summary(n, max_ids=0)) is not None else -1)
                 for n in LOWER)


class Queue:
    """The snapshot of one store, rebuilt when its high-water mark moves."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._facts: dict[int, Facts] = {}
        self._lower: tuple[int, ...] | None = None

    def snapshot(self, ls: LayerStore) -> Snapshot:
        mark = ls.high_water()
        with self._lock:
            if self._snapshot is None or self._snapshot.mark != mark:
                self._snapshot = self._build(ls, mark)
            return self._snapshot

    def _build(self, ls: LayerStore, mark: int) -> Snapshot:
        states = [s for s in ls.proposals().values() if s.status == "pending"]
        delta: dict[int, tuple[Chunk, npt.NDArray[np.float32]]] = {}
        if ls.present([LayerName.DELTA]):
            delta = {c.id: (c, v) for c, v in ls.chunks(LayerName.DELTA)
                     if not is_meta_kind(c.kind)}
        lower = _lower_mark(ls)
        if lower != self._lower:  # user (or base) changed: every match may have too
            self._facts = {}
            self._lower = lower
        self._fill(ls, [delta[s.context_id] for s in states
                        if s.context_id in delta and s.context_id not in self._facts])
        written: dict[int, str] | None = None
        rows = []
        for s in states:
            chunk = delta[s.context_id][0] if s.context_id in delta else None
            if chunk is None and ls.present([LayerName.LOCAL]):
                chunk = ls.chunk(LayerName.LOCAL, s.context_id)
            actor = s.proposal.data.get("actor")
            if not isinstance(actor, str):
                if written is None:
                    written = writers(ls.events((LayerName.DELTA, LayerName.LOCAL)))
                actor = written.get(s.context_id)
            rows.append(_row(s, chunk, actor, self._facts.get(s.context_id, Facts())))
        rows.sort(key=lambda r: (r.proposed_at_ms, r.proposal_id), reverse=True)
        short = short_ids([r.proposal_id for r in rows])
        return Snapshot(mark, [replace(r, short=short[r.proposal_id]) for r in rows])

    def _fill(self, ls: LayerStore, todo: list[tuple[Chunk, npt.NDArray[np.float32]]]) -> None:
        """Facts for chunks not seen at this lower mark: one ``nearest`` per layer."""
        if not todo:
            return
        present = [n for n in LOWER if n in ls.present(LOWER)]
        over: dict[int, list[tuple[LayerName, Chunk]]] = {c.id: [] for c, _ in todo}
        found: dict[int, list[Match]] = {c.id: [] for c, _ in todo}
        vectors = np.vstack([v for _, v in todo]).astype(np.float32)
        ids = [c.id for c, _ in todo]
        for name in present:
            for c, _ in todo:
                other = ls.chunk(name, c.id)
                if other is not None:
                    over[c.id].append((name, other))
            hits = ls.nearest(name, vectors, ids, self.threshold, MAX_MATCHES)
            for (c, _), near in zip(todo, hits, strict=True):
                for sim, other in near:
                    kind = "duplicate" if other.content == c.content else "near-duplicate"
                    found[c.id].append(Match(kind, c, name, other, sim))
        for c, _ in todo:
            matches = sorted(found[c.id], key=lambda m: -(m.similarity or 0.0))
            self._facts[c.id] = Facts(tuple(over[c.id]), tuple(matches))


def _row(state: ProposalState, chunk: Chunk | None, actor: str | None, facts: Facts) -> Row:
    layer = str(state.proposal.data.get("from_layer") or state.proposal.layer.value)
    return Row(state.id, state.context_id,
               title_of(chunk.content) if chunk else "(the proposed chunk is gone)",
               chunk.kind if chunk else "?", actor or "unknown", layer,
               state.proposal.chunk.created_at_ms, chunk.confidence if chunk else 0.0,
               chunk, facts)


def age(ms: int, now_ms: int | None = None) -> str:
    """``3 h ago``: the coarsest unit that is at least 1."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    s = max(0, (now - ms) // 1000)
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if s >= size:
            return f"{s // size} {unit} ago"
    return "just now"


def next_after(rows: list[Row], decided: set[int]) -> Row | None:
    """Where focus goes once ``decided`` are gone from ``rows`` (their order before the
    decision): the first row after the first decided one, else the nearest before it."""
    at = next((i for i, r in enumerate(rows) if r.proposal_id in decided), None)
    if at is None:
        return None
    later = [r for r in rows[at + 1:] if r.proposal_id not in decided]
    earlier = [r for r in rows[:at] if r.proposal_id not in decided]
    return later[0] if later else (earlier[-1] if earlier else None)

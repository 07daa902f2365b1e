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
from sediment.store.events import Event, ProposalState, is_meta_kind
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
    """Pending proposals at one high-water mark, newest first, with the events and
    proposal states they were read from (a proposal's page reuses them)."""

    mark: int
    rows: list[Row]
    events: list[Event] = field(default_factory=list)
    states: dict[int, ProposalState] = field(default_factory=dict)
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


def _merge(found: list[Facts]) -> Facts:
    return Facts(tuple(o for f in found for o in f.overrides),
                 tuple(sorted((m for f in found for m in f.matches),
                              key=lambda m: -(m.similarity or 0.0))))


class Queue:
    """The snapshot of one store, rebuilt when its high-water mark moves.

    A chunk's facts against a layer are kept until that layer's chunk count changes (base
    and user only grow, or are replaced by ``compact``); so a rebuild compares only the
    chunks not seen yet, and after an accept only user is compared again. A decision taken
    through the page :meth:`settle`-s the snapshot in place when its ids are the only ones
    written since: the decided rows leave, the accepted copies are compared with the rows
    left, and no rebuild follows.
    """

    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._facts: dict[LayerName, dict[int, Facts]] = {n: {} for n in LOWER}
        self._marks: dict[LayerName, int] = {}
        self._vectors: dict[int, npt.NDArray[np.float32]] = {}
        self._chunks: dict[int, tuple[Chunk, npt.NDArray[np.float32]]] = {}
        self._titles: dict[int, str] = {}

    def snapshot(self, ls: LayerStore) -> Snapshot:
        mark = ls.high_water()
        with self._lock:
            if self._snapshot is None or self._snapshot.mark != mark:
                self._snapshot = self._build(ls, mark)
            return self._snapshot

    def _build(self, ls: LayerStore, mark: int) -> Snapshot:
        events = ls.events()
        every = ls.proposals()
        states = [s for s in every.values() if s.status == "pending"]
        todo = self._delta(ls, [s.context_id for s in states])
        self._vectors = {c.id: v for c, v in todo}
        for name in LOWER:
            self._compare(ls, name, todo)
        written: dict[int, str] | None = None
        rows = []
        for s in states:
            chunk = self._chunks[s.context_id][0] if s.context_id in self._chunks else None
            if chunk is None and ls.present([LayerName.LOCAL]):
                chunk = ls.chunk(LayerName.LOCAL, s.context_id)
            actor = s.proposal.data.get("actor")
            if not isinstance(actor, str):
                if written is None:
                    written = writers(events)
                actor = written.get(s.context_id)
            facts = _merge([f for n in LOWER if (f := self._facts[n].get(s.context_id))])
            rows.append(_row(s, chunk, actor, facts, self._titles))
        rows.sort(key=lambda r: (r.proposed_at_ms, r.proposal_id), reverse=True)
        short = short_ids([r.proposal_id for r in rows])
        return Snapshot(mark, [replace(r, short=short[r.proposal_id]) for r in rows],
                        events, every)

    def _delta(self, ls: LayerStore, wanted: list[int]
               ) -> list[tuple[Chunk, npt.NDArray[np.float32]]]:
        """The delta chunks ``wanted`` with their vectors: read once (a delta chunk never
        changes), the whole layer in one pass the first time, one by one afterwards."""
        if not ls.present([LayerName.DELTA]):
            return []
        missing = [i for i in wanted if i not in self._chunks]
        if len(missing) > 20:
            self._chunks.update((c.id, (c, v)) for c, v in ls.chunks(LayerName.DELTA)
                                if not is_meta_kind(c.kind))
        else:
            for i in missing:
                c = ls.chunk(LayerName.DELTA, i)
                if c is not None:
                    self._chunks[i] = (c, ls.vector(LayerName.DELTA, i))
        return [self._chunks[i] for i in wanted if i in self._chunks]

    def _compare(self, ls: LayerStore, name: LayerName,
                 chunks: list[tuple[Chunk, npt.NDArray[np.float32]]]) -> None:
        """Facts against ``name`` for the chunks not compared since it last changed: its
        ids once, then one ``nearest`` pass for all of them."""
        summary = ls.summary(name, max_ids=0)
        count = summary.chunks if summary is not None else -1
        if count != self._marks.get(name):
            self._facts[name], self._marks[name] = {}, count
        known = self._facts[name]
        todo = [(c, v) for c, v in chunks if c.id not in known]
        if not todo or summary is None:
            for c, _ in todo:
                known[c.id] = Facts()
            return
        listed = ls.summary(name, max_ids=count)
        ids = set(listed.first_ids) if listed is not None else set()
        hits = ls.nearest(name, np.vstack([v for _, v in todo]).astype(np.float32),
                          [c.id for c, _ in todo], self.threshold, MAX_MATCHES)
        for (c, _), near in zip(todo, hits, strict=True):
            other = ls.chunk(name, c.id) if c.id in ids else None
            known[c.id] = Facts(((name, other),) if other is not None else (),
                                tuple(Match("duplicate" if o.content == c.content
                                            else "near-duplicate", c, name, o, sim)
                                      for sim, o in near))

    def settle(self, ls: LayerStore, before: int, decided: set[int], written: int,
               copies: list[tuple[Chunk, npt.NDArray[np.float32]]]) -> None:
        """The page's own decision on ``decided`` (proposal ids), which appended
        ``written`` decision events and copied ``copies`` into user, applied to the
        snapshot taken at ``before``; nothing happens (the next view rebuilds) unless it is
        still that snapshot and the decision's ids (``LayerStore.high_water`` moved by
        exactly their number: ids are allocated in order) are the only ones written."""
        with self._lock:
            snap = self._snapshot
            after = ls.high_water()
            if snap is None or snap.mark != before or after - before != written:
                return
            rows = [r for r in snap.rows if r.proposal_id not in decided]
            user = self._facts[LayerName.USER]
            if copies:
                summary = ls.summary(LayerName.USER, max_ids=0)
                self._marks[LayerName.USER] = summary.chunks if summary is not None else -1
                rows = [self._against(r, copies, user) for r in rows]
            self._snapshot = Snapshot(after, rows, snap.events, snap.states)

    def _against(self, row: Row, copies: list[tuple[Chunk, npt.NDArray[np.float32]]],
                 user: dict[int, Facts]) -> Row:
        """``row`` with the new user copies it nearly duplicates added to its facts."""
        mine = self._vectors.get(row.context_id)
        if mine is None or row.chunk is None:
            return row
        found = []
        for copy, vector in copies:
            sim = float(np.dot(mine, vector) / ((np.linalg.norm(mine) * np.linalg.norm(vector))
                                                or 1.0))
            if sim >= self.threshold and copy.id != row.context_id:
                kind = "duplicate" if copy.content == row.chunk.content else "near-duplicate"
                found.append(Match(kind, row.chunk, LayerName.USER, copy, sim))
        if not found:
            return row
        old = user.get(row.context_id, Facts())
        user[row.context_id] = Facts(old.overrides, (*old.matches, *found)[:MAX_MATCHES])
        return replace(row, facts=_merge([row.facts, Facts((), tuple(found))]))

    def vector(self, context_id: int) -> npt.NDArray[np.float32] | None:
        """A pending chunk's stored vector (for :meth:`settle`)."""
        return self._vectors.get(context_id)


def _row(state: ProposalState, chunk: Chunk | None, actor: str | None, facts: Facts,
         titles: dict[int, str]) -> Row:
    layer = str(state.proposal.data.get("from_layer") or state.proposal.layer.value)
    title = "(the proposed chunk is gone)"
    if chunk is not None:
        title = titles.get(chunk.id) or titles.setdefault(chunk.id, title_of(chunk.content))
    return Row(state.id, state.context_id, title,
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

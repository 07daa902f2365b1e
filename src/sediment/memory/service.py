"""The memory service every adapter calls: save, recall and manage an actor's memories.

Validation, secret refusal, embedding, dedup by supersession, the per-actor view and use
counting happen here once, so the MCP tools, the CLI and any later adapter behave alike.
Storage is a :class:`~sediment.memory.store.MemoryStore`.

Recall filters and scores by absolute relevance (``sediment.memory.relevance``: a fixed
blend of the memory's cosine and BM25, the same scale in every query and store, with a floor
below which nothing is returned) and orders what passes by hybrid relevance, then by
confidence, then by recency. Hybrid relevance is the search engine's fused score when the
matches come from one store; when several stores match (user, project, global), their
candidates are fused again in one pool, so they compare. It is compared at 6 decimals, so
only true ties fall through to the tie-breakers.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from sediment.credentials import check_text, refuse_credentials
from sediment.embed import Embedder
from sediment.errors import NotFoundError, PermissionDeniedError, ValidationError
from sediment.memory.correction import correction_signals
from sediment.memory.decision import (
    PARAPHRASE_COSINE,
    PARAPHRASE_WORDS,
    Decision,
    Verdict,
    decide,
    normalise,
)
from sediment.memory.events import (
    CONTEXT,
    DEFAULT_PRIORITY,
    HANDLE_RE,
    SAVE,
    USE,
    Fold,
    FoldCache,
    MemoryState,
    handle_space,
)
from sediment.memory.model import (
    CATEGORIES,
    DEFAULT_SOURCE,
    SOURCES,
    Memory,
    MemoryRef,
    Scope,
    check_actor,
    check_category,
    check_content,
    check_scope,
    check_source,
    memory_kind,
    parse_kind,
)
from sediment.memory.relevance import corrections_first, default_min_score, fuse, relevance
from sediment.memory.store import (
    PLACE_OF_SCOPE,
    MemoryStore,
    New,
    NewEvent,
    NewMemory,
    Place,
    StoredMemory,
)
from sediment.store.events import FORGET, PROPOSAL, SUPERSEDE
from sediment.store.uses import UseCounts

DEFAULT_DEDUP_THRESHOLD = PARAPHRASE_COSINE
NEAR_FLOOR = 0.6
"""Memories at this cosine or above that a save did not supersede are named in its result."""
MAX_NEAR = 3
CANDIDATES = 5
CORRECTING_CANDIDATES = 10
DEFAULT_LIMIT = 10
MAX_LIMIT = 50
DEFAULT_LIST_LIMIT = 20
MAX_LIST_LIMIT = 10_000
MAX_QUERY_CHARS = 2_000
MAX_RELATED = 64
MAX_ORIGIN_CHARS = 16_000
EMBED_CACHE = 256
MAX_PROPOSALS_COMPARED = 200
CONTEXT_RE = re.compile(r"^[^\x00-\x1f\x7f]{1,100}$")
SOURCE_RE = re.compile(r"^[^\x00\n]+:[1-9][0-9]{0,8}(?:-[1-9][0-9]{0,8})?$")
UNIT_RE = re.compile(r"^(?:kcp:)?[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")
UPDATE_KEYS = ("content", "category", "confidence")
_Judged = tuple[Memory, float, Decision]
"""A memory, its cosine to the new text and the save decision on the two."""
_HANDLE_OF_PLACE = {Place.USER: "u", Place.PROJECT: "p", Place.GLOBAL: "g", Place.PROPOSAL: "p"}
_SCOPE_OF_PLACE = {Place.USER: Scope.USER, Place.PROJECT: Scope.PROJECT,
                   Place.GLOBAL: Scope.GLOBAL, Place.PROPOSAL: Scope.GLOBAL}


def _limit(value: object, default: int, top: int, name: str = "limit") -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise ValidationError(f"{name} must be an integer from 1 to {top}, got {value!r}")
    return value


def _fraction(value: object, name: str) -> float:
    """A number from 0.0 to 1.0 (NaN is none)."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0.0 <= float(value) <= 1.0:
        raise ValidationError(f"{name} must be a number from 0.0 to 1.0, got {value!r}")
    return float(value)


def _context_name(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not CONTEXT_RE.match(value.strip() or "\x00"):
        raise ValidationError("context must be a name of 1-100 printable characters")
    refuse_credentials(value, "context")
    return value.strip()


def _related(value: object, allow_chunk_sources: bool) -> tuple[list[str], list[int | str]]:
    """(every target as text, the RFC 7.2 sources among them) from ``related_to``."""
    if value is None:
        return [], []
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValidationError("related_to must be a list of chunk ids, KCP unit ids or "
                              "'path:line' references")
    if len(value) > MAX_RELATED:
        raise ValidationError(f"related_to has {len(value)} entries; the maximum is "
                              f"{MAX_RELATED}")
    targets: list[str] = []
    sources: list[int | str] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            refuse_credentials(item, f"related_to[{i}]")
        number = item if isinstance(item, int) and not isinstance(item, bool) else \
            int(item) if isinstance(item, str) and item.strip().isdigit() else None
        if number is not None and 0 < number < 2**32:
            targets.append(str(number))
            if allow_chunk_sources:
                sources.append(number)
        elif isinstance(item, str) and SOURCE_RE.match(item.strip()):
            targets.append(item.strip())
            sources.append(item.strip())
        elif isinstance(item, str) and UNIT_RE.match(item.strip()):
            unit = item.strip()
            targets.append(unit if unit.startswith("kcp:") else f"kcp:{unit}")
        else:
            raise ValidationError(
                f"related_to[{i}] {item!r} is not a chunk id, a KCP unit id or a "
                "'path:line' reference")
    return targets, sources


class MemoryService:
    """An actor-scoped memory API over a :class:`MemoryStore` and an embedder."""

    def __init__(self, store: MemoryStore, embedder: Embedder, *,
                 dedup_threshold: float = DEFAULT_DEDUP_THRESHOLD,
                 max_changed_words: int | None = PARAPHRASE_WORDS,
                 chunk_exists: Callable[[int, str], bool] | None = None) -> None:
        if not 0.0 < dedup_threshold <= 1.0:
            raise ValidationError(f"the dedup threshold must be in (0, 1], got "
                                  f"{dedup_threshold!r}")
        self.store = store
        self.embedder = embedder
        self.dedup_threshold = dedup_threshold
        self.max_changed_words = max_changed_words
        """None: any number of changed words in a restatement above the threshold."""
        self.chunk_exists = chunk_exists
        """Whether a chunk id a memory relates to exists for the saving actor (another
        actor's private note must read as absent, not as a chunk one may cite)."""
        self.min_score = default_min_score(embedder.profile.model or "")
        """Recall's floor when a call gives none (``sediment.memory.relevance``)."""
        self.usage: UseCounts[tuple[str, str, int]] = UseCounts()
        """(actor, store, chunk id) -> uses not written yet."""
        self._lock = threading.RLock()
        self._folds: dict[str, FoldCache] = {}
        self._embed = functools.lru_cache(maxsize=EMBED_CACHE)(self._embed_one)
        """The text's vector; the last ``EMBED_CACHE`` texts are remembered, since agents
        repeat queries and a save is often preceded by a recall of the same words."""
        self._flusher: tuple[threading.Thread, threading.Event, float] | None = None

    def _embed_one(self, text: str) -> np.ndarray:
        vec = np.asarray(self.embedder.embed([text])[0], dtype=np.float32)
        vec.setflags(write=False)
        return vec

    def _fold(self, actor: str) -> Fold:
        """The actor's fold for the store's current version (a version read before the
        events, so a write in between only makes the next call look again)."""
        with self._lock:
            version = self.store.version()
            cache = self._folds.get(actor)
            if cache is not None and cache.version == version:
                return cache.fold
            if cache is None:
                if len(self._folds) >= 64:
                    self._folds.pop(next(iter(self._folds)))
                cache = self._folds[actor] = FoldCache()
            return cache.update(version, self.store.events(actor))

    def _resolve(self, actor: str, memory_id: object, field_name: str = "memory_id"
                 ) -> MemoryRef:
        """The memory a handle (``u3``) or a stored id (``u2147483677``) names; a handle
        of the actor's wins over a chunk id of the same number."""
        text = memory_id.strip() if isinstance(memory_id, str) else memory_id
        if isinstance(text, str) and HANDLE_RE.match(text):
            got = self._fold(actor).handles.get((text, handle_space(text[0], actor)))
            if got is not None:
                return got
            if text[0] == "g":
                raise NotFoundError(f"{field_name} {text}: no such global memory")
        return MemoryRef.parse(memory_id, field_name)

    def _view(self, actor: str, stored: StoredMemory, fold: Fold) -> Memory:
        """The memory as ``actor`` sees it: the chunk joined with its state in ``fold``
        and its uses not written yet."""
        parsed = parse_kind(stored.chunk.kind)
        category, owner = parsed if parsed is not None else ("fact", actor)
        st = fold.memories.get(stored.ref) or MemoryState()
        extra, last = self.usage.pending((actor, stored.ref.store, stored.ref.id))
        last_used = max((x for x in (st.last_used_ms, last if extra else None)
                         if x is not None), default=None)
        source = st.source if st.source in SOURCES else next(
            (s for s, c in SOURCES.items() if math.isclose(c, stored.chunk.confidence,
                                                           abs_tol=1e-6)), DEFAULT_SOURCE)
        return Memory(stored.ref, stored.chunk.content, category, owner,
                      _SCOPE_OF_PLACE[stored.place], source, float(stored.chunk.confidence),
                      stored.chunk.created_at_ms, stored.chunk.author, st.context,
                      list(st.related_to), st.use_count + extra, last_used, st.supersedes,
                      st.superseded_by, st.forgotten, stored.place is Place.PROPOSAL,
                      label=_label(fold, actor, owner, stored.ref),
                      supersedes_label=_label(fold, actor, owner, st.supersedes),
                      superseded_by_label=_label(fold, actor, owner, st.superseded_by),
                      origin=st.origin)

    def _read(self, actor: str, ref: MemoryRef, fold: Fold) -> Memory | None:
        """The memory ``ref`` as ``actor`` sees it, if they may read it."""
        stored = self.store.get(actor, ref)
        return None if stored is None else self._view(actor, stored, fold)

    def _views(self, actor: str, scopes: Sequence[Scope]) -> list[Memory]:
        """Every memory the actor reads in ``scopes``, as the actor sees it."""
        fold = self._fold(actor)
        return [self._view(actor, s, fold) for s in self.store.memories(actor, scopes)]

    def _get(self, actor: str, memory_id: object, field_name: str = "memory_id", *,
             own: bool = False) -> tuple[StoredMemory, Memory]:
        """The memory ``memory_id`` names among those ``actor`` reads (``own``: among
        their own), as the actor sees it."""
        ref = self._resolve(actor, memory_id, field_name)
        stored = self.store.get(actor, ref)
        memory = None if stored is None else self._view(actor, stored, self._fold(actor))
        if stored is None or memory is None or (own and memory.actor != actor):
            named = ref if own else str(memory_id).strip()
            raise NotFoundError(f"{field_name} {named}: no such memory among those of actor "
                                f"{actor!r}")
        return stored, memory

    def _owned(self, actor: str, memory_id: object, *, human: bool
               ) -> tuple[StoredMemory, Memory]:
        """The memory an update or a delete changes: current, and global only for a human."""
        stored, memory = self._get(actor, memory_id)
        given = f"memory_id {str(memory_id).strip()}"
        if memory.forgotten:
            raise NotFoundError(f"{given}: that memory was forgotten")
        if memory.superseded_by is not None:
            raise ValidationError(f"{given} was superseded by "
                                  f"{memory.superseded_by_label or memory.superseded_by}; "
                                  "change that one instead")
        if stored.place is Place.GLOBAL and not human:
            raise PermissionDeniedError(
                f"{given} is a global memory: global memories are governed by humans "
                "(sediment memory update/forget)")
        return stored, memory

    def save(self, actor: str, content: object, category: object, source: object = None,
             scope: object = None, context: object = None, related_to: object = None, *,
             supersedes: object = None, keep_separate: object = False,
             human: bool = False, origin: object = None) -> dict[str, Any]:
        """Save a memory. The same text as one of the actor's active memories in the scope
        (case and whitespace aside) writes nothing (status ``exists``). Otherwise the save
        decision (``sediment.memory.decision``) supersedes a restatement or a correction of
        one of them (across categories); the agent has the last word: ``supersedes`` names
        the memory it replaces, ``keep_separate`` supersedes nothing. Close memories kept
        beside it are named in ``near``.

        An agent's global save is a proposal, deduplicated too: against the actor's own
        pending proposals (the new one supersedes the nearest), then against the global
        memories, which an agent cannot change: a restatement of one writes nothing
        (status ``exists``, naming it), a correction of one is proposed with
        ``corrects_id`` for the reviewer."""
        check_actor(actor)
        text = check_content(content)
        cat = check_category(category)
        src = check_source(DEFAULT_SOURCE if source is None else source)
        scp = check_scope(Scope.USER.value if scope is None else scope)
        ctx = _context_name(context)
        kept = _origin(origin)
        targets, sources = _related(related_to, scp is not Scope.USER)
        for s in sources:
            if isinstance(s, int) and self.chunk_exists is not None \
                    and not self.chunk_exists(s, actor):
                raise ValidationError(f"related_to: chunk {s} does not exist in this "
                                      "project's layers")
        refuse_credentials(text, "content")
        place = Place.PROPOSAL if scp is Scope.GLOBAL and not human else PLACE_OF_SCOPE[scp]
        vec = self._embed(text)
        author = "human" if human else "mcp"
        if keep_separate is not True and keep_separate is not False:
            raise ValidationError(f"keep_separate must be true or false, got "
                                  f"{keep_separate!r}")
        if supersedes is not None and keep_separate:
            raise ValidationError("supersedes and keep_separate: true contradict each other; "
                                  "give one of them")
        correcting = cat == "correction" or src == "corrected"
        with self._lock, self.store.transaction(place, actor):
            hit: _Judged | None = None
            known: _Judged | None = None
            close: list[_Judged] = []
            pool: list[tuple[Memory, float]] | None = None
            if place is not Place.PROPOSAL:
                pool = self._candidates(actor, scp, text, vec, correcting=correcting)
                same = _identical(pool, text)
                if same is not None:
                    return {"status": "exists", "id": same.shown, "chunk_id": same.ref.id,
                            "scope": scp.value, "category": same.category, "similarity": 1.0,
                            "looks_like_correction": False, "correction_signals": [],
                            "use_count": same.use_count,
                            "created_at_ms": same.created_at_ms}
            if supersedes is not None:
                chosen = self._chosen(actor, supersedes, place)
                cosine = self._similarity(chosen.content, vec)
                hit = chosen, cosine, self._decide(chosen.content, text, cosine, correcting)
            elif place is Place.PROPOSAL:
                mine, cosine = self._nearest_proposal(actor, text, vec)
                if mine is not None:
                    hit = mine, cosine, self._decide(mine.content, text, cosine, correcting)
                else:
                    known = self._nearest(actor, scp, text, vec, anyone=True,
                                          correcting=correcting)[0]
                    if known is not None and known[2].verdict is Verdict.RESTATEMENT:
                        return {"status": "exists", "id": known[0].shown, "scope": scp.value,
                                "category": known[0].category,
                                "similarity": round(known[1], 4),
                                "looks_like_correction": False, "correction_signals": []}
            elif keep_separate:
                close = self._nearest(actor, scp, text, vec, correcting=correcting,
                                      pool=pool)[1]
            else:
                hit, close = self._nearest(actor, scp, text, vec, correcting=correcting,
                                           pool=pool)
            replaced: list[NewEvent] = []
            said: dict[str, Any] = {}
            if hit is not None:
                old, similarity, decision = hit
                ctx = ctx or old.context
                if related_to is None:
                    targets = list(old.related_to)
                fixes = decision.verdict is Verdict.CORRECTION
                signals = correction_signals(old.content, text)
                if fixes:
                    signals = sorted(set(signals) | set(decision.signals))
                replaced.append(NewEvent(SUPERSEDE, {
                    "event": "supersede", "old_id": old.ref.id, "new_id": New(0),
                    "reason": "agent" if supersedes is not None else "dedup",
                    "similarity": round(similarity, 6), "correction": fixes,
                    "signals": signals, "actor": actor},
                    (old.ref.id, New(0)), author))
                said = {"superseded_id": old.shown, "superseded_content": old.content,
                        "similarity": round(similarity, 4), "looks_like_correction": fixes,
                        "correction_signals": signals, "decision": decision.verdict.value}
                if fixes and (decision.old_value or decision.new_value):
                    said["changed"] = {"from": decision.old_value, "to": decision.new_value}
            elif known is not None:
                said = {"corrects_id": known[0].shown, "similarity": round(known[1], 4),
                        "looks_like_correction": True,
                        "correction_signals": correction_signals(known[0].content, text)}
            memory = NewMemory(memory_kind(cat, actor), text, author, SOURCES[src],
                               tuple(sources), vec)
            handle = self._fold(actor).next_handle(_HANDLE_OF_PLACE[place], actor)
            events = [*_save_event(actor, scp, src, SOURCES[src], ctx, targets, author,
                                   handle), *replaced]
            if kept is not None:
                events[0].data["origin"] = kept
            if place is Place.PROPOSAL:
                proposed: dict[str, Any] = {
                    "event": "propose", "context_id": New(0), "target": "user",
                    "from_layer": "delta", "copied_to_delta": False, "actor": actor}
                if known is not None:
                    proposed["corrects"] = known[0].shown  # the review page shows it beside
                events.append(NewEvent(PROPOSAL, proposed, (New(0),), author))
            if ctx is not None and ("u" if place is Place.USER else "p", actor, ctx) \
                    not in self._fold(actor).contexts:  # a context is made on first use
                events.insert(1, NewEvent(CONTEXT, {"event": "context", "actor": actor,
                                                    "name": ctx, "description": "",
                                                    "priority": DEFAULT_PRIORITY}))
            (ref,) = self.store.append(place, actor, [memory], events)
        out: dict[str, Any] = {
            "status": "proposed" if place is Place.PROPOSAL else
            ("updated" if hit is not None else "created"),
            "id": handle, "chunk_id": ref.id, "scope": scp.value, "category": cat,
            "source": src, "confidence": SOURCES[src], "context": ctx, **said}
        if close:
            out["near"] = [{"id": m.shown, "content": m.content,
                            "similarity": round(c, 4), "decision": d.verdict.value}
                           for m, c, d in close]
        return out

    def existing(self, actor: str, content: object, scope: object = None) -> Memory | None:
        """The actor's active memory in ``scope`` with this very text, which a save would
        answer ``exists`` with (an import's dry run asks this; nothing is written)."""
        check_actor(actor)
        text = check_content(content)
        scp = check_scope(Scope.USER.value if scope is None else scope)
        pool = self._candidates(actor, scp, text, self._embed(text))
        return _identical(pool, text)

    def _chosen(self, actor: str, memory_id: object, place: Place) -> Memory:
        """The memory an agent's ``supersedes`` names: its own, active, in the same store."""
        stored, memory = self._get(actor, memory_id, "supersedes", own=True)
        ref = memory.ref
        if not memory.active:
            raise ValidationError(f"supersedes {ref}: that memory is no longer active "
                                  "(superseded or forgotten)")
        if stored.place is not place:
            raise ValidationError(f"supersedes {ref} is in {memory.scope.value} scope; a "
                                  "memory can only supersede one in its own scope")
        return memory

    def _decide(self, old: str, new: str, cosine: float, correcting: bool = False
                ) -> Decision:
        """The save decision (``sediment.memory.decision``) with this service's paraphrase
        threshold; a threshold of 1.0 turns dedup off (identical text still ``exists``)."""
        if self.dedup_threshold >= 1.0:
            return Decision(Verdict.DIFFERENT, "dedup is off")
        most = self.max_changed_words
        return decide(old, new, cosine, correcting=correcting,
                      paraphrase_cosine=self.dedup_threshold,
                      paraphrase_words=most if most is not None else sys.maxsize)

    def _candidates(self, actor: str, scope: Scope, text: str, vec: np.ndarray, *,
                    anyone: bool = False, correcting: bool = False
                    ) -> list[tuple[Memory, float]]:
        """The actor's (``anyone``: anybody's) most similar active memories in ``scope``,
        best first. A correcting save looks wider: more of them, found by words too (the
        name it corrects), since a correction reworded scores low on cosine alone."""
        k = CORRECTING_CANDIDATES if correcting else CANDIDATES
        found = self.store.search(actor, scope, text, vec, CATEGORIES, k, lexical=False)
        if correcting:
            seen = {c.ref for c in found}
            found += [c for c in self.store.search(actor, scope, text, vec, CATEGORIES, k)
                      if c.ref not in seen]
        fold = self._fold(actor)
        out: list[tuple[Memory, float]] = []
        for cand in found:
            memory = self._read(actor, cand.ref, fold)
            if memory is not None and memory.active and (anyone or memory.actor == actor):
                # found by words only, a candidate has no cosine of the search's
                cosine = cand.vector_score if math.isfinite(cand.vector_score) else \
                    self._similarity(memory.content, vec)
                out.append((memory, cosine))
        return out

    def _similarity(self, content: str, vec: np.ndarray) -> float:
        """The cosine of ``content``'s vector and ``vec``."""
        other = self._embed(content)
        norm = float(np.linalg.norm(other) * np.linalg.norm(vec)) or 1.0
        return float(np.dot(other, vec)) / norm

    def _nearest(self, actor: str, scope: Scope, text: str, vec: np.ndarray, *,
                 anyone: bool = False, correcting: bool = False,
                 pool: list[tuple[Memory, float]] | None = None
                 ) -> tuple[_Judged | None, list[_Judged]]:
        """The memory the save supersedes (a restatement or a correction of it: the
        correction first, then the most similar) with its cosine and the decision, and the
        close memories it keeps beside it."""
        if pool is None:
            pool = self._candidates(actor, scope, text, vec, anyone=anyone,
                                    correcting=correcting)
        judged = [(m, c, self._decide(m.content, text, c, correcting)) for m, c in pool]
        hits = [j for j in judged if j[2].supersedes]
        hits.sort(key=lambda j: (j[2].verdict is not Verdict.CORRECTION or
                                 j[2].reason != "names the old value it replaces", -j[1]))
        best = hits[0] if hits else None
        near = [j for j in judged if j is not best and j[1] >= NEAR_FLOOR]
        near.sort(key=lambda j: -j[1])
        return best, near[:MAX_NEAR]

    def _nearest_proposal(self, actor: str, text: str, vec: np.ndarray
                          ) -> tuple[Memory | None, float]:
        """The actor's most similar pending proposal at the threshold or above. Proposals
        wait in the delta layer, which memory search does not cover; an actor has few, so
        the newest ``MAX_PROPOSALS_COMPARED`` are compared (their vectors come from the
        embedding cache when this process saved them)."""
        mine = [m for m in self._views(actor, (Scope.GLOBAL,)) if m.pending
                and m.actor == actor and not m.forgotten and m.superseded_by is None]
        mine.sort(key=lambda m: -m.created_at_ms)
        best: Memory | None = None
        top = 0.0
        for m in mine[:MAX_PROPOSALS_COMPARED]:
            score = self._similarity(m.content, vec)
            if score > top and self._decide(m.content, text, score).supersedes:
                best, top = m, score
        return best, top

    def recall(self, actor: str, query: object, category: object = None,
               scope: object = None, limit: object = None, min_score: object = None, *,
               count_use: bool = True) -> dict[str, Any]:
        """The actor's active memories relevant to ``query``, best first; none scoring
        under ``min_score`` (default ``self.min_score``; 0 returns every match)."""
        check_actor(actor)
        floor = self.min_score if min_score is None else _fraction(min_score, "min_score")
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("query must be a non-empty string")
        if len(query) > MAX_QUERY_CHARS:
            raise ValidationError(f"query has {len(query)} characters; the maximum is "
                                  f"{MAX_QUERY_CHARS}")
        cats = CATEGORIES if category is None else (check_category(category),)
        scopes = tuple(Scope) if scope is None else (check_scope(scope),)
        k = _limit(limit, DEFAULT_LIMIT, MAX_LIMIT)
        vec = self._embed(query)
        found_in = [got for s in scopes
                    if (got := self.store.search(actor, s, query, vec, cats, max(3 * k, 30)))]
        pool = [c for got in found_in for c in got]
        ranks = [c.score for c in pool] if len(found_in) == 1 else fuse(
            [c.vector_score for c in pool], [c.lexical_score for c in pool]).tolist()
        fold = self._fold(actor)
        found: list[Memory] = []
        flagged: set[int] = set()
        for cand, rank in zip(pool, ranks, strict=True):
            memory = self._read(actor, cand.ref, fold)
            if memory is None or not memory.active:
                continue
            memory.score = relevance(cand.vector_score, cand.lexical_score)
            memory.rank = rank
            if ((fold.memories.get(cand.ref) or MemoryState()).supersede_info or {}).get(
                    "correction"):
                flagged.add(len(found))
            found.append(memory)
        corrections_first(found, flagged)
        found = sorted((m for m in found if round(m.score or 0.0, 6) >= floor),
                       key=lambda m: (-round(m.rank, 6), -m.confidence, -m.created_at_ms,
                                      str(m.ref)))[:k]
        if count_use:
            now = int(time.time() * 1000)
            for m in found:
                self.usage.add((actor, m.ref.store, m.ref.id), now)
                m.use_count += 1
                m.last_used_ms = now
        return {"query": query, "min_score": floor, "memories": [m.to_dict() for m in found]}

    def list_memories(self, actor: str, category: object = None, limit: object = None,
             scope: object = None) -> dict[str, Any]:
        check_actor(actor)
        cat = None if category is None else check_category(category)
        scopes = tuple(Scope) if scope is None else (check_scope(scope),)
        k = _limit(limit, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT)
        rows = [m for m in self._views(actor, scopes) if m.active
                or (m.pending and not m.forgotten and m.superseded_by is None)]
        if cat is not None:
            rows = [m for m in rows if m.category == cat]
        rows.sort(key=lambda m: (-m.use_count, -m.created_at_ms, str(m.ref)))
        return {"total": len(rows), "memories": [m.to_dict() for m in rows[:k]],
                "contexts": self._contexts(actor, rows)}

    def active(self, actor: str, scope: object = None) -> list[Memory]:
        """The actor's active memories (``scope``: one scope, else all it reads), in the
        order they were written in each store: what an export writes."""
        check_actor(actor)
        scopes = tuple(Scope) if scope is None else (check_scope(scope),)
        rows = [m for m in self._views(actor, scopes) if m.active]
        rows.sort(key=lambda m: (m.ref.store, m.ref.id))
        return rows

    def show(self, actor: str, memory_id: object) -> dict[str, Any]:
        check_actor(actor)
        _, memory = self._get(actor, memory_id)
        ref, fold = memory.ref, self._fold(actor)
        seen = {ref}
        older = self._chain(actor, fold, memory, seen, lambda m: m.supersedes)
        newer = self._chain(actor, fold, memory, seen, lambda m: m.superseded_by)
        versions = [*reversed(newer), memory, *older]
        state = fold.memories.get(ref) or MemoryState()
        context = None
        if memory.context is not None:
            c = fold.contexts.get((ref.store, memory.actor, memory.context))
            context = {"name": memory.context,
                       "description": c.description if c else "",
                       "priority": c.priority if c else DEFAULT_PRIORITY}
        history: list[dict[str, Any]] = [{"at_ms": at, "count": n}
                                         for at, n, who in state.uses if who == actor]
        extra, last = self.usage.pending((actor, ref.store, ref.id))
        if extra:
            history.append({"at_ms": last, "count": extra, "pending": True})
        return {"memory": memory.to_dict(),
                "versions": [{**v.to_dict(), **self._why(actor, fold, v)} for v in versions],
                "context": context, "related_to": list(memory.related_to),
                "use_history": history}

    def _chain(self, actor: str, fold: Fold, memory: Memory, seen: set[MemoryRef],
               step: Callable[[Memory], MemoryRef | None]) -> list[Memory]:
        """The versions ``step`` leads to from ``memory``, one after another, until one is
        missing or already in ``seen`` (which gains each)."""
        out: list[Memory] = []
        ref = step(memory)
        while ref is not None and ref not in seen:
            seen.add(ref)
            got = self._read(actor, ref, fold)
            if got is None:
                break
            out.append(got)
            ref = step(got)
        return out

    def _why(self, actor: str, fold: Fold, version: Memory) -> dict[str, Any]:
        state = fold.memories.get(version.ref) or MemoryState()
        out: dict[str, Any] = {}
        if state.supersede_info:
            out["superseded_because"] = state.supersede_info
        if state.restored_from is not None:
            out["restored_from"] = _label(fold, actor, version.actor, state.restored_from) \
                or str(state.restored_from)
        return out

    def update(self, actor: str, memory_id: object, updates: object, *,
               human: bool = False) -> dict[str, Any]:
        check_actor(actor)
        if not isinstance(updates, Mapping) or not updates:
            raise ValidationError("updates must be an object with at least one of "
                                  f"{', '.join(UPDATE_KEYS)}")
        unknown = sorted(set(updates) - set(UPDATE_KEYS))
        if unknown:
            raise ValidationError(f"updates: unknown field(s) {', '.join(map(str, unknown))}; "
                                  f"allowed: {', '.join(UPDATE_KEYS)}")
        stored, old = self._owned(actor, memory_id, human=human)
        text = old.content if "content" in updates and updates["content"] is None else \
            check_content(updates.get("content", old.content), "updates.content")
        cat = check_category(updates.get("category", old.category), "updates.category")
        conf = _fraction(updates.get("confidence", round(old.confidence, 6)),
                         "updates.confidence")
        refuse_credentials(text, "updates.content")
        place = stored.place
        author = "human" if human else "mcp"
        memory = NewMemory(memory_kind(cat, old.actor), text, author, conf,
                           tuple(stored.chunk.sources), self._embed(text))
        signals = correction_signals(old.content, text)
        with self._lock, self.store.transaction(place, actor):
            self._owned(actor, memory_id, human=human)  # still current under the lock
            handle = self._fold(actor).next_handle(_HANDLE_OF_PLACE[place], old.actor)
            events = [
                *_save_event(old.actor, old.scope, old.source, conf, old.context,
                             old.related_to, author, handle),
                NewEvent(SUPERSEDE, {"event": "supersede", "old_id": old.ref.id,
                                     "new_id": New(0), "reason": "update",
                                     "similarity": None, "correction": bool(signals),
                                     "signals": signals, "actor": actor},
                         (old.ref.id, New(0)), author)]
            (ref,) = self.store.append(place, actor, [memory], events)
        new_id = handle if old.actor == actor or handle[0] == "g" else str(ref)
        return {"status": "updated", "id": new_id, "chunk_id": ref.id,
                "superseded_id": old.shown,
                "content": text, "category": cat, "confidence": conf,
                "context": old.context, "related_to": old.related_to,
                "looks_like_correction": bool(signals), "correction_signals": signals}

    def delete(self, actor: str, memory_id: object, *, human: bool = False,
               reason: str = "deleted") -> dict[str, Any]:
        check_actor(actor)
        stored, memory = self._owned(actor, memory_id, human=human)
        author = "human" if human else "mcp"
        with self._lock, self.store.transaction(stored.place, actor):
            self._owned(actor, memory_id, human=human)
            self.store.append(stored.place, actor, [], [NewEvent(
                FORGET, {"event": "forget", "context_id": memory.ref.id, "actor": actor,
                         "reason": reason}, (memory.ref.id,), author)])
        return {"status": "deleted", "id": memory.shown}

    def forget_all(self, actor: str, confirm: object = False, scope: object = None, *,
                   human: bool = False, purge: bool = False) -> dict[str, Any]:
        """Forget every active memory the actor owns here (user and project scopes;
        global memories are the humans' to remove one by one)."""
        check_actor(actor)
        scopes = (Scope.USER, Scope.PROJECT) if scope is None else \
            (check_scope(scope, (Scope.USER, Scope.PROJECT)),)
        mine = [m for m in self._views(actor, scopes) if m.active]
        if confirm is not True:
            raise ValidationError(
                f"forget_all would forget all {len(mine)} of your memories in "
                f"{' and '.join(s.value for s in scopes)} scope; nothing was changed. "
                "Call it again with confirm: true (sediment memory forget-all --yes)")
        author = "human" if human else "mcp"
        for place in {PLACE_OF_SCOPE[m.scope]: None for m in mine}:
            with self._lock, self.store.transaction(place, actor):
                self.store.append(place, actor, [], [NewEvent(
                    FORGET, {"event": "forget", "context_id": m.ref.id, "actor": actor,
                             "reason": "forget_all"}, (m.ref.id,), author)
                    for m in mine if PLACE_OF_SCOPE[m.scope] is place])
        out: dict[str, Any] = {"status": "forgotten", "forgotten": len(mine),
                               "scopes": [s.value for s in scopes]}
        if purge:
            out["purged"] = self.purge(actor)["purged"]
        return out

    def contexts(self, actor: str) -> dict[str, Any]:
        check_actor(actor)
        rows = [m for m in self._views(actor, (Scope.USER, Scope.PROJECT)) if m.active]
        return {"contexts": self._contexts(actor, rows, every=True)}

    def set_context(self, actor: str, name: object, scope: object = None,
                    description: object = None, priority: object = None) -> dict[str, Any]:
        check_actor(actor)
        ctx = _context_name(name)
        assert ctx is not None
        scp = check_scope(Scope.USER.value if scope is None else scope,
                          (Scope.USER, Scope.PROJECT))
        if description is not None and (not isinstance(description, str)
                                        or len(description) > 1000):
            raise ValidationError("description must be text of at most 1000 characters")
        prio = None if priority is None else _fraction(priority, "priority")
        data: dict[str, Any] = {"event": "context", "actor": actor, "name": ctx}
        if description is not None:
            if description:  # "" clears it
                check_text(description, "description")
            data["description"] = description
        if prio is not None:
            data["priority"] = prio
        place = PLACE_OF_SCOPE[scp]
        with self._lock, self.store.transaction(place, actor):
            self.store.append(place, actor, [], [NewEvent(CONTEXT, data)])
        return {"status": "saved", "context": ctx, "scope": scp.value}

    def _contexts(self, actor: str, rows: Sequence[Memory], *, every: bool = False
                  ) -> list[dict[str, Any]]:
        counts = Counter((m.ref.store, m.context) for m in rows if m.context is not None)
        out = [{"name": name, "scope": "user" if store == "u" else "project",
                "description": c.description, "priority": c.priority,
                "memories": counts[(store, name)]}
               for (store, owner, name), c in self._fold(actor).contexts.items()
               if owner == actor and (every or (store, name) in counts)]
        out.sort(key=lambda c: (-float(c["priority"]), str(c["name"]), str(c["scope"])))
        return out

    def purge(self, actor: str) -> dict[str, Any]:
        """Remove the content of the actor's forgotten memories (and the versions they
        superseded) from disk; the events stay, holding ids and no text."""
        check_actor(actor)
        fold = self._fold(actor)
        stored = {s.ref: s for s in self.store.memories(actor, (Scope.USER, Scope.PROJECT))}
        drop: set[MemoryRef] = set()
        for ref in stored:
            state = fold.memories.get(ref)
            if state is None or not state.forgotten:
                continue
            cur: MemoryRef | None = ref
            while cur is not None and cur not in drop and cur in stored:
                drop.add(cur)
                nxt = fold.memories.get(cur)
                cur = nxt.supersedes if nxt is not None else None
        with self._lock:
            removed = self.store.purge(actor, sorted(drop))
        return {"status": "purged", "purged": removed}

    def manage(self, actor: str, action: object, memory_id: object = None,
               updates: object = None, category: object = None, limit: object = None,
               confirm: object = None, scope: object = None, *, human: bool = False
               ) -> dict[str, Any]:
        """One ``manage_memory`` action; ``scope`` narrows ``forget_all`` (None: both the
        user and the project scope, as the command line's ``forget-all`` does)."""
        run: dict[str, Callable[[], dict[str, Any]]] = {
            "list": lambda: self.list_memories(actor, category, limit),
            "delete": lambda: self.delete(actor, memory_id, human=human),
            "update": lambda: self.update(actor, memory_id, updates, human=human),
            "forget_all": lambda: self.forget_all(actor, confirm is True, scope, human=human),
            "restore": lambda: self.restore(actor, memory_id, human=human),
            "history": lambda: {"status": "ok", **self.show(actor, memory_id)}}
        if not isinstance(action, str) or action not in run:
            raise ValidationError(f"action {action!r} is unknown: use list, delete, update, "
                                  "forget_all, restore or history")
        if memory_id is None and action not in ("list", "forget_all"):
            raise ValidationError(f"memory_id is required for action {action!r}")
        return {"action": action, **run[action]()}

    def restore(self, actor: str, memory_id: object, *, human: bool = False
                ) -> dict[str, Any]:
        """Bring a superseded memory back as a new active memory (same text, category,
        source, context and relationships), beside the one that superseded it: the way
        to undo a merge of two distinct facts. Forget the newer one too to roll back."""
        check_actor(actor)
        stored, old = self._get(actor, memory_id, own=True)
        ref = old.ref
        if old.forgotten:
            raise ValidationError(f"memory_id {ref} was forgotten; save it again instead")
        if old.superseded_by is None:
            raise ValidationError(f"memory_id {ref} is active; only a superseded memory "
                                  "can be restored")
        if stored.place is Place.GLOBAL and not human:
            raise PermissionDeniedError(f"memory_id {ref} is a global memory: global "
                                        "memories are governed by humans")
        author = "human" if human else "mcp"
        memory = NewMemory(stored.chunk.kind, old.content, author, old.confidence,
                           tuple(stored.chunk.sources), self._embed(old.content))
        with self._lock, self.store.transaction(stored.place, actor):
            handle = self._fold(actor).next_handle(_HANDLE_OF_PLACE[stored.place], actor)
            events = _save_event(actor, old.scope, old.source, old.confidence, old.context,
                                 old.related_to, author, handle)
            events[0].data["restores"] = ref.id
            (new,) = self.store.append(stored.place, actor, [memory], events)
        return {"status": "restored", "id": handle, "chunk_id": new.id,
                "restored_id": old.shown, "content": old.content,
                "superseded_by": old.superseded_by_label or str(old.superseded_by)}

    def flush(self) -> int:
        """Append the uses gathered since the last flush, one event per actor and store."""
        groups: dict[tuple[str, str], dict[int, list[int]]] = {}
        for (actor, store, cid), slot in self.usage.take().items():
            groups.setdefault((actor, store), {})[cid] = slot
        written = len(groups)
        for (actor, store), uses in list(groups.items()):
            place = Place.USER_USAGE if store == "u" else Place.PROJECT
            event = NewEvent(USE, {"event": "use", "actor": actor,
                                   "uses": {str(cid): [n, last]
                                            for cid, (n, last) in sorted(uses.items())}},
                             tuple(sorted(uses)))
            try:
                self.store.append(place, actor, [], [event])
            except Exception:
                self.usage.put_back({(a, s, cid): slot for (a, s), left in groups.items()
                                     for cid, slot in left.items()})
                raise
            del groups[(actor, store)]
        return written

    def start_flusher(self, interval: float) -> None:
        """Flush every ``interval`` seconds on a daemon thread until ``close``: a crash
        loses at most the uses of one interval."""
        if self._flusher is None and interval > 0:
            stop = threading.Event()
            thread = threading.Thread(target=self._flush_every, args=(interval, stop),
                                      name="sediment-memory-usage", daemon=True)
            self._flusher = thread, stop, interval
            thread.start()

    def _flush_every(self, interval: float, stop: threading.Event) -> None:
        while not stop.wait(interval):
            with contextlib.suppress(Exception):  # the next flush retries: counts were put back
                self.flush()

    def close(self) -> None:
        if self._flusher is not None:
            thread, stop, interval = self._flusher
            stop.set()
            thread.join(timeout=interval + 5)
            self._flusher = None
        self.flush()


def _label(fold: Fold, actor: str, owner: str, ref: MemoryRef | None) -> str | None:
    """``ref``'s handle as ``actor`` calls it (only their own memories have one)."""
    state = fold.memories.get(ref) if ref is not None else None
    handle = state.handle if state is not None else None
    return handle if handle and (owner == actor or handle[0] == "g") else None


def _origin(value: object) -> dict[str, Any] | None:
    """An import's ``origin``: a JSON object of at most ``MAX_ORIGIN_CHARS``, holding no
    credential (it is stored beside the content)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValidationError("origin must be an object")
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"origin is not plain JSON: {exc}") from None
    except RecursionError:  # a program's or an imported file's object, not a request's
        raise ValidationError("origin nests objects and lists too deeply to be stored "
                              "as JSON") from None
    if len(text) > MAX_ORIGIN_CHARS:
        raise ValidationError(f"origin has {len(text)} characters of JSON; the maximum is "
                              f"{MAX_ORIGIN_CHARS}")
    refuse_credentials(text, "origin")
    parsed: dict[str, Any] = json.loads(text)
    return parsed


def _save_event(actor: str, scope: Scope, source: str, confidence: float,
                context: str | None, related: Sequence[str], author: str, handle: str
                ) -> list[NewEvent]:
    """The ``meta.memory`` event of a new memory: its handle (``Fold``), and what the chunk
    cannot hold (a context, relationships, a source its confidence does not imply)."""
    data: dict[str, Any] = {"event": "save", "memory_id": New(0), "actor": actor,
                            "scope": scope.value, "handle": handle}
    if context is not None or related or not math.isclose(SOURCES.get(source, -1.0),
                                                          confidence, abs_tol=1e-6):
        data.update({"source": source, "context": context, "related_to": list(related)})
    return [NewEvent(SAVE, data, (New(0),), author)]

def _identical(pool: Sequence[tuple[Memory, float]], text: str) -> Memory | None:
    """The memory in ``pool`` with this very text (case, whitespace and a final full stop
    aside): a re-save of it writes nothing."""
    key = normalise(text)
    return next((m for m, _ in pool if normalise(m.content) == key), None)


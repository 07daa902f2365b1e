"""Progressive context for agent loops: the operations every adapter calls.

The service stores items (task, iteration, skill, file, output, error) for an actor and a
run, ranks them for a query with the multi-factor model of :mod:`ranking`, ages them
through the lifecycle (active, aging, summarized, archived; :func:`state_of`), and renders
the best of them as a token-budgeted Markdown block.

Retrieval degrades instead of failing (the loop must keep running): semantic + lexical;
lexical only when the embedder fails; the last results cached on disk when the store cannot
be read; an empty context with a warning when there is no cache either.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.context import ranking, text
from sediment.context.index import ItemIndex
from sediment.context.settings import CONTEXT_TYPES, ContextSettings
from sediment.context.state import (
    DEFAULT_RUN,
    FEEDBACK_EVENT,
    ITEM_EVENT,
    RUN_ID_PATTERN,
    USE_EVENT,
    Fold,
    ItemState,
    fold,
)
from sediment.context.store import (
    ITEM_PREFIX,
    ContextStore,
    New,
    NewEvent,
    NewItem,
    StoredItem,
)
from sediment.context.tokens import count_tokens, tokenizer_name
from sediment.credentials import (
    check_metadata,
    check_number,
    check_text,
    check_texts,
    refuse_credentials,
)
from sediment.embed import Embedder
from sediment.errors import NotFoundError, ValidationError
from sediment.store.events import FORGET, SUPERSEDE
from sediment.store.uses import UseCounts

QUERY_CHARS = 500
MAX_CONTENT_CHARS = 50_000
"""The longest item ``store_context`` takes (the MCP tool's limit, on every path)."""
MAX_TAGS = 50
MAX_TAG_CHARS = 100
QUERY_CACHE = 64
REMEMBERED = 4096
"""How many (actor, item) -> last query that returned it ``mark_useful`` remembers."""
_MB = 1024 * 1024


def cache_name(actor: str, run_id: str | None) -> str:
    """The fallback cache file of an actor and a run (None: every run): a SHA-256 of the
    pair's JSON, so no two pairs share a file (the old ``last-<actor>-<run>.json`` gave
    actor ``a-b`` run ``c`` and actor ``a`` run ``b-c`` the same one, and is not read: it
    may hold another actor's results) and any actor or run fits a file name."""
    key = json.dumps([actor, run_id], ensure_ascii=False).encode("utf-8")
    return f"last-{hashlib.sha256(key).hexdigest()}.json"


def item_ref(cid: int) -> str:
    return f"c{cid}"


def parse_ref(raw: str) -> int:
    s = raw.strip()
    s = s[1:] if s[:1] in ("c", "C") else s
    if not (s.isascii() and s.isdigit()):  # '²' is a digit to isdigit, not to int
        raise ValidationError(f"item_id: {raw!r} is not a context item id (like c12)")
    return int(s)


AGELESS = ("skill", "task")
"""Types age never moves past active: skills are curated, and a run's task is what every
iteration works on (it left the loop's context after 50 iterations, issue 27). They decay
in recency only, are never summarised, archived or expired by age."""


def state_of(st: ItemState, age: int, archived: bool, s: ContextSettings) -> str:
    """Lifecycle by iterations since stored (``AGELESS`` types stay active)."""
    if archived:
        return "archived"
    if st.type in AGELESS:
        return "active"
    if age > s.archive_after_iterations:
        return "archived"
    if st.summary_of or age > s.summarize_after_iterations:
        return "summarized"
    return "active" if age <= s.active_iterations else "aging"


def _run(value: object, *, optional: bool = False) -> None:
    """A run id as the MCP tools take it (``RUN_ID_PATTERN``, at most 100 characters)."""
    if value is None and optional:
        return
    if not isinstance(value, str) or len(value) > 100 or not re.fullmatch(RUN_ID_PATTERN, value):
        raise ValidationError(f"run_id {value!r} must be 1-100 letters, digits, '_', '.', "
                              "':' or '-'")


def _check_relevant(query: object, max_items: object, context_types: object,
                    min_score: object, max_tokens: object, run_id: object,
                    include_archived: object, skills_across_runs: object) -> None:
    """The arguments of ``get_relevant_context``, checked before the ranking, whose
    failures are answered with a warning and the cache: a wrong argument is the caller's
    error, named, not a store failure (the MCP tool's request model checks the same)."""
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query must be a non-empty string")
    for name, value, low in (("max_items", max_items, 0), ("max_tokens", max_tokens, 0)):
        if value is None and name == "max_tokens":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValidationError(f"{name} must be an integer of at least {low}, got "
                                  f"{value!r}")
    if context_types is not None:
        if isinstance(context_types, str | bytes) or not isinstance(context_types, Sequence):
            raise ValidationError(f"context_types must be a list of {', '.join(CONTEXT_TYPES)}")
        for i, t in enumerate(context_types):
            if not isinstance(t, str) or t not in CONTEXT_TYPES:
                raise ValidationError(f"context_types[{i}]: {t!r} is not one of "
                                      f"{', '.join(CONTEXT_TYPES)}")
    score = check_number(min_score, "min_score", minimum=0)
    if score > 1:
        raise ValidationError(f"min_score must be from 0 to 1, got {min_score!r}")
    _run(run_id, optional=True)
    for name, flag in (("include_archived", include_archived),
                       ("skills_across_runs", skills_across_runs)):
        if not isinstance(flag, bool) and not (flag is None and name == "skills_across_runs"):
            raise ValidationError(f"{name} must be true or false, got {flag!r}")


class ContextLoop:
    """The context service of one project's store."""

    def __init__(self, store: ContextStore, embedder: Embedder | None,
                 settings: ContextSettings | None = None, *, project: str = "",
                 cache_dir: Path | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings or ContextSettings()
        self.project = project
        self.cache_dir = cache_dir
        self._fold: tuple[Any, Fold] | None = None
        self._folded: tuple[int, int, Fold] | None = None
        self._items: tuple[Any, dict[int, StoredItem]] | None = None
        self._indexes: dict[bool, tuple[Any, ItemIndex]] = {}
        self._codes: dict[str | None, int] = {None: 0}
        self._codes_lock = threading.Lock()
        """The codes of actors and runs in the index's labels."""
        self._hidden: tuple[Any, npt.NDArray[np.int64]] | None = None
        self.uses: UseCounts[int] = UseCounts()
        self._queries: dict[str, npt.NDArray[np.float32]] = {}
        self._returned: dict[tuple[str, int], str] = {}
        self._votes_lock = threading.Lock()
        self._vote_rows: dict[str, int] = {}
        self._vote_vecs = np.zeros((0, self._dim()), dtype=np.float32)

    # -- state ------------------------------------------------------------------------
    def _folded_state(self) -> Fold:
        """Every event folded, incrementally: only the events appended since the last
        call are applied (a compaction, which rewrites the log, folds it all again)."""
        key = self.store.version()
        if self._fold is not None and self._fold[0] == key:
            return self._fold[1]
        events = self.store.events()
        done = self._folded
        if done is not None and 0 < done[0] <= len(events) and events[done[0] - 1].id == done[1]:
            f = fold(events[done[0]:], done[2])
        else:
            f = fold(events)
        self._folded = (len(events), events[-1].id if events else 0, f)
        self._fold = (key, f)
        return f

    def _state(self, *, archived: bool = False) -> tuple[Fold, dict[int, StoredItem]]:
        f = self._folded_state()
        key = (self.store.version(), archived)
        if self._items is None or self._items[0] != key:
            self._items = (key, {i.chunk.id: i for i in self.store.items(archived=archived)})
        return f, self._items[1]

    def _embed_query(self, q: str) -> npt.NDArray[np.float32] | None:
        """A loop asks with the same task text iteration after iteration: the last
        ``QUERY_CACHE`` query vectors are kept (a failed embedding is not)."""
        got = self._queries.pop(q, None)
        if got is None:
            got = self._embed([q])
            if got is None:
                return None
        self._queries[q] = got
        while len(self._queries) > QUERY_CACHE:
            del self._queries[next(iter(self._queries))]
        return got

    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32] | None:
        if self.embedder is None:
            return None
        try:
            return np.asarray(self.embedder.embed(texts), dtype=np.float32)
        except Exception:
            return None

    def _dim(self) -> int:
        return self.embedder.profile.dim if self.embedder is not None else 1

    # -- writing ----------------------------------------------------------------------
    def _commit(self, items: Sequence[NewItem], events: Sequence[NewEvent]) -> list[int]:
        """Append as one commit, with the access counts gathered since the last one."""
        taken = self.uses.take()
        extra = [NewEvent(USE_EVENT, {"event": "use", "uses": {
            str(cid): [n, last] for cid, (n, last) in sorted(taken.items())}},
            tuple(sorted(taken)))] if taken else []
        try:
            return self.store.append(items, [*events, *extra])
        except BaseException:
            self.uses.put_back(taken)
            raise

    def flush(self) -> int:
        """Write the pending access counts on their own (at shutdown); how many items."""
        n = len(self.uses)
        if n:
            self._commit([], [])
        return n

    def _make_room(self) -> None:
        limit = self.settings.max_size_mb * _MB
        if self.store.size_bytes() < limit:
            return
        self.prune("system", self.settings.prune_min_usefulness, everyone=True)
        if self.store.size_bytes() >= limit:
            raise ValidationError(
                f"the context store is full ({self.store.size_bytes() // _MB} MB of "
                f"max_size_mb {self.settings.max_size_mb}) even after pruning: archive or "
                "summarize old context, or raise [context] max_size_mb")

    def _store(self, actor: str, run_id: str, content: str, ctype: str, iteration: int,
               tags: Sequence[str], metadata: dict[str, Any],
               summary_of: Sequence[int] = ()) -> tuple[int, bool]:
        vecs = self._embed([content])
        embedded = vecs is not None
        vec = vecs[0] if vecs is not None else np.zeros(self._dim(), dtype=np.float32)
        data = {"event": "store", "item": New(0), "actor": actor, "project": self.project,
                "run_id": run_id, "iteration": iteration, "type": ctype, "tags": list(tags),
                "metadata": metadata, "embedded": embedded, "summary_of": list(summary_of)}
        events = [NewEvent(ITEM_EVENT, data, (New(0),))]
        events += [NewEvent(SUPERSEDE, {"event": "supersede", "old_id": old, "new_id": New(0),
                                        "reason": "summary", "actor": actor}, (old, New(0)))
                   for old in summary_of]
        ids = self._commit([NewItem(ITEM_PREFIX + ctype, content, "mcp", vec,
                                         tuple(summary_of))], events)
        return ids[0], embedded

    def of(self, actor: str) -> ContextLoop:
        """The loop that holds ``actor``'s context: this one (a team store's loop gives
        each actor their own, so its ``health`` and ``stats`` are that actor's)."""
        return self

    def store_context(self, actor: str, content: str, context_type: str,
                      tags: Sequence[str] = (), metadata: dict[str, Any] | None = None,
                      run_id: str = DEFAULT_RUN) -> dict[str, Any]:
        if context_type not in CONTEXT_TYPES:
            raise ValidationError(f"context_type: {context_type!r} is not one of "
                                  f"{', '.join(CONTEXT_TYPES)}")
        check_text(content, "content")
        if len(content) > MAX_CONTENT_CHARS:
            raise ValidationError(f"content has {len(content):,} characters; an item holds "
                                  f"at most {MAX_CONTENT_CHARS:,}")
        tags = check_texts(tags, "tags")
        if len(tags) > MAX_TAGS:
            raise ValidationError(f"tags has {len(tags):,} entries; the maximum is {MAX_TAGS}")
        for i, tag in enumerate(tags):
            if len(tag) > MAX_TAG_CHARS:
                raise ValidationError(f"tags[{i}] has {len(tag):,} characters; the maximum is "
                                      f"{MAX_TAG_CHARS}")
        metadata = check_metadata(metadata)
        _run(run_id)
        self._make_room()
        iteration = self._folded_state().current(actor, run_id)
        cid, embedded = self._store(actor, run_id, content, context_type, iteration, tags,
                                    metadata)
        out = {"id": item_ref(cid), "context_type": context_type, "run_id": run_id,
               "iteration": iteration, "embedded": embedded}
        if not embedded:
            out["warning"] = "embedder unavailable: stored without a vector (lexical only)"
        return out

    def store_iteration_result(self, actor: str, iteration: int, summary: str, success: bool,
                               duration_ms: int = 0, tokens_used: int = 0, cost: float = 0.0,
                               tool_calls: Sequence[str] = (), artifacts: Sequence[str] = (),
                               error: str | None = None, run_id: str = DEFAULT_RUN
                               ) -> dict[str, Any]:
        check_text(summary, "summary")
        check_text(error, "error", optional=True)
        tool_calls, artifacts = check_texts(tool_calls, "tool_calls"), \
            check_texts(artifacts, "artifacts")
        cost = check_number(cost, "cost", minimum=0)
        check_number(duration_ms, "duration_ms", minimum=0)
        check_number(tokens_used, "tokens_used", minimum=0)
        _run(run_id)
        self._make_room()
        verb = "succeeded" if success else "failed"
        meta = {"success": success, "duration_ms": duration_ms, "tokens_used": tokens_used,
                "cost": cost, "tool_calls": list(tool_calls), "artifacts": list(artifacts),
                "error": error}
        cid, _ = self._store(actor, run_id, f"Iteration {iteration} {verb}: {summary}",
                             "iteration", iteration, ["iteration"], meta)
        out: dict[str, Any] = {"id": item_ref(cid), "iteration": iteration, "run_id": run_id}
        if error:
            eid, _ = self._store(actor, run_id, f"Iteration {iteration} error: {error}",
                                 "error", iteration, ["error"], {"iteration_item": cid})
            out["error_id"] = item_ref(eid)
        return out

    def mark_useful(self, actor: str, item_id: str, helpful: bool,
                    reason: str | None = None, query: str | None = None) -> dict[str, Any]:
        """Record a vote for the request it answers: ``query``, or else the query of the
        last ``get_relevant_context`` that returned the item to this actor (remembered in
        memory); with neither, the vote counts for every query (see ``ranking``)."""
        cid = parse_ref(item_id)
        f, _ = self._state(archived=True)
        st = f.items.get(cid)
        if st is None or st.actor != actor:
            raise NotFoundError(f"item_id: no context item {item_id} of actor {actor!r}")
        with self._votes_lock:
            remembered = self._returned.get((actor, cid), "")
        asked = (query if query and query.strip() else remembered)[:QUERY_CHARS]
        if asked:
            refuse_credentials(asked, "query")
        if reason:
            refuse_credentials(reason, "reason")
        data: dict[str, Any] = {"event": "feedback", "item": cid, "actor": actor,
                                "helpful": helpful, "reason": reason or "",
                                "iteration": f.current(st.actor, st.run_id)}
        if asked:
            data["query"] = asked
        self._commit([], [NewEvent(FEEDBACK_EVENT, data, (cid,))])
        h, u = st.helpful + helpful, st.unhelpful + (not helpful)
        return {"id": item_ref(cid), "helpful": helpful, "query": asked or None,
                "usefulness": round(ranking.usefulness(h, u), 4)}

    def _remember(self, actor: str, cid: int, query: str) -> None:
        key = (actor, cid)
        with self._votes_lock:
            self._returned.pop(key, None)
            self._returned[key] = query
            while len(self._returned) > REMEMBERED:
                del self._returned[next(iter(self._returned))]

    def _query_votes(self, f: Fold, query: str, qv: npt.NDArray[np.float32] | None
                     ) -> tuple[dict[int, float], dict[int, float], dict[int, float]]:
        """Item -> the weighted helpful and unhelpful votes given for queries like
        ``query`` (``ranking.query_weight``), each faded by its age (``ranking.vote_decay``),
        and the helpful ones no older than ``feedback_lift_iterations`` (those that may
        lift an item into the ranked set). Without vectors only the same query text
        counts."""
        good: defaultdict[int, float] = defaultdict(float)
        bad: defaultdict[int, float] = defaultdict(float)
        lift: defaultdict[int, float] = defaultdict(float)
        if not f.votes:
            return good, bad, lift
        texts = list(f.votes)
        sims = np.asarray([1.0 if t == query else 0.0 for t in texts], dtype=np.float32)
        if qv is not None:
            with self._votes_lock:
                mat = self._vote_matrix(texts)
            if mat is not None:
                sims = np.maximum(sims, mat @ qv)
        tau = self.settings.feedback_similarity
        for j in np.flatnonzero(sims >= tau).tolist():
            w = ranking.query_weight(float(sims[j]), tau)
            if w <= 0.0:
                continue
            for cid, helpful, when in f.votes[texts[j]]:
                st = f.items.get(cid)
                if st is None:
                    continue
                age = f.current(st.actor, st.run_id) - when
                vote = w * ranking.vote_decay(age, self.settings.feedback_half_life)
                (good if helpful else bad)[cid] += vote
                if helpful and age <= self.settings.feedback_lift_iterations:
                    lift[cid] += vote
        return good, bad, lift

    def _vote_matrix(self, texts: list[str]) -> npt.NDArray[np.float32] | None:
        """The vectors of the queries votes named, embedded once per process (those asked
        already come from the query cache); None when the embedder fails."""
        missing = [t for t in texts if t not in self._vote_rows]
        if missing:
            cached = [self._queries.get(t) for t in missing]
            todo = [t for t, v in zip(missing, cached, strict=True) if v is None]
            got = self._embed(todo) if todo else np.zeros((0, self._dim()), np.float32)
            if got is None:
                return None
            fresh = iter(got)
            rows = [v[0] if v is not None else next(fresh) for v in cached]
            start = len(self._vote_vecs)
            self._vote_vecs = np.vstack([self._vote_vecs,
                                         np.asarray(rows, dtype=np.float32)])
            for i, t in enumerate(missing, start):
                self._vote_rows[t] = i
        return self._vote_vecs[[self._vote_rows[t] for t in texts]]

    # -- reading ----------------------------------------------------------------------
    def _describe(self, st: ItemState, item: StoredItem, f: Fold) -> dict[str, Any]:
        """The item as every answer shows it; its accesses are the written ones plus those
        not written yet."""
        age = f.current(st.actor, st.run_id) - st.iteration
        n, last = self.uses.pending(st.id)
        last = max(last, st.last_accessed_ms)
        return {"id": item_ref(st.id), "type": st.type, "content": item.chunk.content,
                "run_id": st.run_id, "iteration": st.iteration, "age": age,
                "state": state_of(st, age, item.archived, self.settings), "tags": st.tags,
                "metadata": st.metadata,
                "usefulness": round(ranking.usefulness(st.helpful, st.unhelpful), 4),
                "sources": [item_ref(s) for s in st.summary_of],
                "access_count": st.access_count + n,
                "last_accessed": datetime.fromtimestamp(last / 1000, UTC).isoformat(
                    timespec="seconds") if last else None}

    def _rank(self, actor: str, query: str, types: Sequence[str] | None, min_score: float,
              max_items: int, run_id: str | None, archived: bool,
              warnings: list[str], skills_across_runs: bool = True
              ) -> tuple[list[dict[str, Any]], int, str]:
        """Relevance selects, the factors order (see :mod:`ranking`): the hybrid pool's
        best ``max_items`` of this actor (and run), plus those marked helpful (with no
        query) within its best ``feedback_reach x max_items``, plus those marked helpful
        for a similar query, ordered by the multi-factor score."""
        s = self.settings
        f = self._folded_state()
        q = query[:QUERY_CHARS]
        qv = self._embed_query(q)
        mode = "semantic+lexical"
        if qv is None:
            mode = "lexical"
            warnings.append("embedder unavailable: ranked by lexical relevance only")
        index = self._index(f, archived)
        allowed = index.labels(0) == self._codes.get(actor, -1)
        hidden = self._hidden_ids(f)
        if len(hidden):
            allowed &= ~np.isin(index.ids, hidden)
        if run_id is not None:
            same_run = index.labels(1) == self._codes.get(run_id, -1)
            allowed &= (same_run | (index.labels(2) == 1)) if skills_across_runs else same_run
        reach = max_items * max(1, s.feedback_reach)
        good, bad, lift = self._query_votes(f, q, qv[0] if qv is not None else None)
        extra = np.flatnonzero(np.isin(index.ids, np.fromiter(lift, np.int64, len(lift)))
                               & allowed) if lift else None
        pool = index.search(q, qv[0] if qv is not None else None, allowed, reach, extra)
        rows = []
        for p, cos, lex in zip(pool.pos.tolist(), pool.cosine.tolist(), pool.lexical.tolist(),
                               strict=True):
            item = index.items[p]
            st = f.items.get(item.chunk.id)
            if st is not None:
                rows.append((st, item, None if cos != cos else cos, lex or None))
        head = rows[:max_items]
        if lift:
            head = ranking.select([(r, ranking.semantic(r[2] if r[0].embedded else None, r[3]),
                                    lift.get(r[0].id, 0.0))
                                   for r in head + [r for r in rows[max_items:]
                                                    if r[0].id in lift]],
                                  max_items, s)
        taken = {r[0].id for r in head}
        chosen = head + [r for r in rows[max_items:]
                         if r[0].helpful > r[0].queried and r[0].id not in taken]
        scored = []
        for st, item, cos, lex in chosen:
            now = f.current(st.actor, st.run_id)
            plain = [(g, ranking.vote_decay(now - when, s.feedback_half_life))
                     for g, when in st.plain]
            fac = ranking.Factors(
                ranking.semantic(cos if st.embedded else None, lex),
                ranking.recency(now - st.iteration, st.type == "skill", s),
                ranking.usefulness(
                    ranking.bounded(sum(w for g, w in plain if g) + good.get(st.id, 0.0)),
                    sum(w for g, w in plain if not g) + bad.get(st.id, 0.0)),
                ranking.type_match(st.type, types))
            scored.append((round(fac.score(s), 4), st, item, fac))
        scored.sort(key=lambda x: (-x[0], -x[1].id))
        out = []
        for score, st, item, fac in scored[:max_items]:
            if score < min_score:
                break
            self.uses.add(st.id)
            self._remember(actor, st.id, q)
            out.append({**self._describe(st, item, f), "score": score,
                        "factors": fac.explain(s)})
        return out, int(allowed.sum()), mode

    def _index(self, f: Fold, archived: bool) -> ItemIndex:
        """The index of the active items (or of the archived then the active ones),
        following appends, labelled with each item's actor, run (as codes) and whether it
        is a skill."""
        key = self.store.version()
        slot = self._indexes.get(archived)
        if slot is not None and slot[0] == key:
            return slot[1]
        items = self.store.items(archived=archived)
        index = slot[1] if slot is not None else ItemIndex(self._dim(), labels=3)
        codes = self._codes

        def label(it: StoredItem) -> tuple[int, int, int]:
            st = f.items.get(it.chunk.id)
            if st is None:
                return 0, 0, 0
            return (codes.setdefault(st.actor, len(codes)),
                    codes.setdefault(st.run_id, len(codes)), int(st.type == "skill"))

        with self._codes_lock:  # two indexes labelled at once must not share a code
            index.sync(items, label)
        self._indexes[archived] = (key, index)
        return index

    def _hidden_ids(self, f: Fold) -> npt.NDArray[np.int64]:
        key = self.store.version()
        if self._hidden is None or self._hidden[0] != key:
            self._hidden = (key, np.fromiter(f.hidden, np.int64, len(f.hidden)))
        return self._hidden[1]

    def get_relevant_context(self, actor: str, query: str, max_items: int = 10,
                             context_types: Sequence[str] | None = None,
                             min_score: float = 0.3, max_tokens: int | None = None,
                             run_id: str | None = None, include_archived: bool = False,
                             skills_across_runs: bool | None = None) -> dict[str, Any]:
        """Never raises for a broken embedder or store: see the module docstring. With
        ``run_id``, skills of the actor's other runs are included when
        ``skills_across_runs`` (default: the setting of that name, true) holds."""
        _check_relevant(query, max_items, context_types, min_score, max_tokens, run_id,
                        include_archived, skills_across_runs)
        across = (self.settings.skills_across_runs if skills_across_runs is None
                  else skills_across_runs)
        warnings: list[str] = []
        started = time.perf_counter()
        try:
            items, candidates, mode = self._rank(actor, query, context_types, min_score,
                                                 max_items, run_id, include_archived,
                                                 warnings, across)
            self._save_cache(actor, run_id, items)
        except Exception as exc:
            warnings.append(f"context store unreadable ({type(exc).__name__}: {exc})")
            cached = self._load_cache(actor, run_id)
            if cached is None:
                warnings.append("no cached results: returning empty context")
                items, candidates, mode = [], 0, "empty"
            else:
                warnings.append("returning the last results cached on disk")
                items, candidates, mode = cached[:max_items], len(cached), "cache"
        out: dict[str, Any] = {
            "query": query[:QUERY_CHARS], "items": items, "warnings": warnings,
            "stats": {"mode": mode, "candidates": candidates, "returned": len(items),
                      "search_ms": round((time.perf_counter() - started) * 1000, 3)}}
        if max_tokens is not None:
            out.update(inject(items, max_tokens))
        return out

    def get_iteration_history(self, actor: str, last_n: int = 5,
                              run_id: str = DEFAULT_RUN) -> dict[str, Any]:
        if isinstance(last_n, bool) or not isinstance(last_n, int) or last_n < 1:
            raise ValidationError(f"last_n must be an integer of at least 1, got {last_n!r}")
        _run(run_id)
        f, items = self._state(archived=True)
        rows = sorted((st for st in f.items.values()
                       if st.actor == actor and st.run_id == run_id and st.type == "iteration"
                       and not st.summary_of and st.id in items
                       and st.hidden != "forgotten"),
                      key=lambda st: (st.iteration, st.id))[-last_n:]
        return {"run_id": run_id, "current_iteration": f.current(actor, run_id),
                "iterations": [{**self._describe(st, items[st.id], f),
                                "success": st.metadata.get("success")}
                               for st in reversed(rows)]}

    def get_skills(self, actor: str, tags: Sequence[str] | None = None,
                   min_score: float = 0.5) -> dict[str, Any]:
        """``min_score`` is measured against the skill's usefulness (feedback), not a
        query relevance: ``get_skills`` has no query."""
        f, items = self._state()
        want = set(tags or ())
        out = []
        for st in f.items.values():
            if (st.actor != actor or st.type != "skill" or st.hidden or st.id not in items
                    or (want and not want & set(st.tags))):
                continue
            d = self._describe(st, items[st.id], f)
            if d["usefulness"] >= min_score:
                out.append(d)
        out.sort(key=lambda d: (-d["usefulness"], d["id"]))
        return {"skills": out}

    def import_skills(self, actor: str, skills: Sequence[Any]) -> dict[str, Any]:
        """Store ``skills`` (``skills.Skill``) as skill items."""
        ids = [self.store_context(actor, sk.content, "skill", sk.tags, sk.metadata)["id"]
               for sk in skills]
        return {"imported": len(ids), "ids": ids}

    # -- lifecycle --------------------------------------------------------------------
    def summarize_old_context(self, actor: str, older_than_iterations: int = 20,
                              run_id: str | None = None) -> dict[str, Any]:
        """Summarise items older than ``older_than_iterations`` and archive those past
        the archive threshold.

        Grouping: per run, per type and per window of ``older_than_iterations // 2`` (at
        least 5) iterations; a group of two or more items (``AGELESS`` types excepted)
        becomes one summary of its three most central sentences, whose sources
        are the originals, which are superseded (hidden, not deleted).
        """
        if isinstance(older_than_iterations, bool) or not isinstance(older_than_iterations, int) \
                or older_than_iterations < 1:
            raise ValidationError("older_than_iterations must be an integer of at least 1, "
                                  f"got {older_than_iterations!r}")
        _run(run_id, optional=True)
        s = self.settings
        f, items = self._state()
        window = max(5, older_than_iterations // 2)
        groups: dict[tuple[str, str, int], list[ItemState]] = {}
        to_archive: list[int] = []
        for st in f.items.values():
            if st.actor != actor or st.id not in items or st.hidden:
                continue
            if run_id is not None and st.run_id != run_id:
                continue
            age = f.current(st.actor, st.run_id) - st.iteration
            if st.type in AGELESS:
                continue
            if age > s.archive_after_iterations:
                to_archive.append(st.id)
            elif age > older_than_iterations and not st.summary_of:
                groups.setdefault((st.run_id, st.type, st.iteration // window), []).append(st)
        summaries = []
        for (run, ctype, _), members in sorted(groups.items()):
            if len(members) < 2:
                continue
            members.sort(key=lambda st: st.id)
            embed = self.embedder.embed if self.embedder is not None else None
            body = text.central_sentences([items[m.id].chunk.content for m in members], embed)
            cid, _ = self._store(actor, run, body, ctype, max(m.iteration for m in members),
                                 sorted({t for m in members for t in m.tags}),
                                 {"summary": True}, [m.id for m in members])
            summaries.append({"id": item_ref(cid), "type": ctype, "run_id": run,
                              "sources": [item_ref(m.id) for m in members]})
        f, every = self._state(archived=True)
        expired = [(st, why) for st in f.items.values()
                   if st.actor == actor and not st.hidden and st.id in every
                   and (run_id is None or st.run_id == run_id) and (why := self._expiry(st, f))]
        pruned = self._forget(actor, expired, every)
        gone = {st.id for st, _ in expired}
        day = datetime.now(UTC).strftime("%Y-%m-%d")
        archived = self.store.archive(sorted(set(to_archive) - gone), day)
        return {"summaries": summaries, "summarized": sum(len(x["sources"]) for x in summaries),
                "archived": archived, "archive": f"AGENTS.archive-{day}.db" if archived else None,
                "pruned": pruned}

    def prune(self, actor: str, min_score: float = 0.3, *, everyone: bool = False
              ) -> dict[str, Any]:
        """Forget items whose usefulness is under ``min_score`` and items older than
        ``prune_after_iterations`` that no feedback marked helpful (never a skill marked
        helpful), then compact them out of the store."""
        f, items = self._state(archived=True)
        out: list[tuple[ItemState, str]] = []
        for st in f.items.values():
            if (not everyone and st.actor != actor) or st.hidden or st.id not in items:
                continue
            if st.type == "skill" and st.helpful > 0:
                continue
            use = ranking.usefulness(st.helpful, st.unhelpful)
            if use < min_score:
                out.append((st, f"usefulness {use:.2f} < {min_score}"))
            elif why := self._expiry(st, f):
                out.append((st, why))
        removed = self._forget(actor, out, items)
        return {"removed": removed, "count": len(removed)}

    def _expiry(self, st: ItemState, f: Fold) -> str:
        """Why the item expired: past ``prune_after_iterations`` (iterations since stored)
        and never helpful; empty if it did not (``AGELESS`` types never expire)."""
        after = self.settings.prune_after_iterations
        if (st.type in AGELESS or st.helpful
                or f.current(st.actor, st.run_id) - st.iteration <= after):
            return ""
        return f"older than {after} iterations and never marked helpful"

    def _forget(self, actor: str, entries: Sequence[tuple[ItemState, str]],
                items: dict[int, StoredItem]) -> list[dict[str, Any]]:
        """One forget event per item, in one commit, then the store rewritten without
        them (appending a forget event never shrinks a file)."""
        if not entries:
            return []
        self._commit([], [NewEvent(FORGET, {"event": "forget", "context_id": st.id,
                                            "reason": why, "actor": actor}, (st.id,))
                          for st, why in entries])
        self.store.drop([st.id for st, _ in entries])
        return [{"id": item_ref(st.id), "type": st.type, "reason": why,
                 "usefulness": round(ranking.usefulness(st.helpful, st.unhelpful), 4),
                 "content": items[st.id].chunk.content[:200]} for st, why in entries]

    def stats(self, actor: str) -> dict[str, Any]:
        f, items = self._state(archived=True)
        by_type: Counter[str] = Counter()
        by_state: Counter[str] = Counter()
        hidden = {"superseded": 0, "forgotten": 0}
        helpful = unhelpful = accesses = 0
        for st in f.items.values():
            if st.actor != actor:
                continue
            accesses += st.access_count + self.uses.pending(st.id)[0]
            if st.hidden:
                hidden[st.hidden] += 1
            elif st.id in items:
                by_type[st.type] += 1
                by_state[state_of(st, f.current(st.actor, st.run_id) - st.iteration,
                                  items[st.id].archived, self.settings)] += 1
                helpful += st.helpful
                unhelpful += st.unhelpful
        runs = {run: it for (a, run), it in f.runs.items() if a == actor}
        return {"total": by_type.total(), "by_type": dict(by_type), "by_state": dict(by_state),
                "hidden": hidden, "feedback": {"helpful": helpful, "not_helpful": unhelpful},
                "accesses": accesses,
                "runs": runs, "size_bytes": self.store.size_bytes(),
                "max_size_mb": self.settings.max_size_mb}

    def health(self) -> dict[str, Any]:
        checks: dict[str, str] = {}
        try:
            self.store.events()
            checks["store"] = "ok"
        except Exception as exc:
            checks["store"] = f"error: {type(exc).__name__}: {exc}"
        checks["embedder"] = "ok" if self._embed(["health check"]) is not None else \
            "unavailable (lexical ranking only)"
        checks["tokenizer"] = tokenizer_name()
        ok = checks["store"] == "ok" and checks["embedder"] == "ok"
        return {"status": "ok" if ok else "degraded", "checks": checks}

    # -- the on-disk cache of the last results (derived, safe to delete) ---------------
    def _cache_path(self, actor: str, run_id: str | None) -> Path | None:
        if self.cache_dir is None:
            return None
        return self.cache_dir / cache_name(actor, run_id)

    def _save_cache(self, actor: str, run_id: str | None, items: list[dict[str, Any]]) -> None:
        """Replaced whole (a reader never sees half a file) but not synced to disk: it is
        derived, and a cache lost in a crash only means no fallback until the next read."""
        path = self._cache_path(actor, run_id)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass

    def _load_cache(self, actor: str, run_id: str | None) -> list[dict[str, Any]] | None:
        path = self._cache_path(actor, run_id)
        try:
            data = json.loads(path.read_text()) if path is not None else None
        except (OSError, ValueError):
            return None
        return data if isinstance(data, list) else None


def inject(items: Sequence[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
    """The Markdown block of the best items that fit ``max_tokens`` (counted by
    :func:`count_tokens`): an item that does not fit whole is shortened to its leading
    whole sentences, or left out."""
    sections: list[tuple[str, str]] = []
    included, shortened, left_out = [], [], []
    if count_tokens(text.block([])) > max_tokens:
        return {"block": "", "tokens": 0, "included": [], "shortened": [],
                "left_out": [d["id"] for d in items]}
    for d in items:
        def fits(candidate: str, kind: str = d["type"]) -> bool:
            return count_tokens(text.block([*sections, (kind, candidate)])) <= max_tokens
        content = " ".join(d["content"].split()) if "\n" not in d["content"] else d["content"]
        if fits(content):
            sections.append((d["type"], content))
            included.append(d["id"])
            continue
        short = text.first_sentences(d["content"], fits)
        if short is not None:
            sections.append((d["type"], short))
            shortened.append(d["id"])
        else:
            left_out.append(d["id"])
    out = text.block(sections)
    return {"block": out, "tokens": count_tokens(out), "included": included,
            "shortened": shortened, "left_out": left_out}

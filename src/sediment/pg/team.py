"""The team server's per-actor context service, and what a memory may relate to.

:class:`TeamContextLoop` gives each caller its own :class:`~sediment.context.ContextLoop`
over a store bound to that caller, so the SQL of every context read and write names the
caller. ``sediment.workspace`` builds it with the database's memories and tokens.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sediment.context import ContextLoop, ContextSettings
from sediment.context.state import DEFAULT_RUN
from sediment.embed import Embedder
from sediment.pg.context import PgContextStore

MAX_LOOPS = 256
NOBODY = "-"
"""No actor can be named this (actor names start with a letter or digit): the shared
loop's store, which only ``health`` reads, is bound to it and so holds no rows."""


class TeamContextLoop(ContextLoop):
    """The context service of a team store: each call runs in the caller's own loop, whose
    store reads and writes only the caller's rows (and whose caches are the caller's)."""

    def __init__(self, store: PgContextStore, embedder: Embedder | None,
                 settings: ContextSettings | None = None, *, project: str = "",
                 cache_dir: Path | None = None) -> None:
        super().__init__(store.bound(NOBODY), embedder, settings, project=project,
                         cache_dir=cache_dir)
        self._shared = store
        self._loops: OrderedDict[str, ContextLoop] = OrderedDict()
        self._guard = threading.Lock()

    def of(self, actor: str) -> ContextLoop:
        with self._guard:
            got = self._loops.get(actor)
            if got is None:
                got = self._loops[actor] = ContextLoop(
                    self._shared.bound(actor), self.embedder, self.settings,
                    project=self.project, cache_dir=self.cache_dir)
                while len(self._loops) > MAX_LOOPS:
                    self._loops.popitem(last=False)
            else:
                self._loops.move_to_end(actor)
            return got

    def flush(self) -> int:
        """Write every actor's pending access counts."""
        with self._guard:
            loops = list(self._loops.values())
        return sum(loop.flush() for loop in loops)

    def store_context(self, actor: str, content: str, context_type: str,
                      tags: Sequence[str] = (), metadata: dict[str, Any] | None = None,
                      run_id: str = DEFAULT_RUN) -> dict[str, Any]:
        return self.of(actor).store_context(actor, content, context_type, tags, metadata,
                                            run_id)

    def store_iteration_result(self, actor: str, iteration: int, summary: str, success: bool,
                               duration_ms: int = 0, tokens_used: int = 0, cost: float = 0.0,
                               tool_calls: Sequence[str] = (), artifacts: Sequence[str] = (),
                               error: str | None = None, run_id: str = DEFAULT_RUN
                               ) -> dict[str, Any]:
        return self.of(actor).store_iteration_result(
            actor, iteration, summary, success, duration_ms, tokens_used, cost, tool_calls,
            artifacts, error, run_id)

    def mark_useful(self, actor: str, item_id: str, helpful: bool,
                    reason: str | None = None, query: str | None = None) -> dict[str, Any]:
        return self.of(actor).mark_useful(actor, item_id, helpful, reason, query)

    def get_relevant_context(self, actor: str, query: str, max_items: int = 10,
                             context_types: Sequence[str] | None = None,
                             min_score: float = 0.3, max_tokens: int | None = None,
                             run_id: str | None = None, include_archived: bool = False,
                             skills_across_runs: bool | None = None) -> dict[str, Any]:
        return self.of(actor).get_relevant_context(actor, query, max_items, context_types,
                                                   min_score, max_tokens, run_id,
                                                   include_archived, skills_across_runs)

    def get_iteration_history(self, actor: str, last_n: int = 5,
                              run_id: str = DEFAULT_RUN) -> dict[str, Any]:
        return self.of(actor).get_iteration_history(actor, last_n, run_id)

    def get_skills(self, actor: str, tags: Sequence[str] | None = None,
                   min_score: float = 0.5) -> dict[str, Any]:
        return self.of(actor).get_skills(actor, tags, min_score)

    def import_skills(self, actor: str, skills: Sequence[Any]) -> dict[str, Any]:
        return self.of(actor).import_skills(actor, skills)

    def summarize_old_context(self, actor: str, older_than_iterations: int = 20,
                              run_id: str | None = None) -> dict[str, Any]:
        return self.of(actor).summarize_old_context(actor, older_than_iterations, run_id)

    def prune(self, actor: str, min_score: float = 0.3, *, everyone: bool = False
              ) -> dict[str, Any]:
        return self.of(actor).prune(actor, min_score, everyone=everyone)

    def stats(self, actor: str) -> dict[str, Any]:
        return self.of(actor).stats(actor)


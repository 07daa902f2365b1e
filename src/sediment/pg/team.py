"""The team server's per-actor context service.

:class:`TeamContextLoop` gives each caller its own :class:`~sediment.context.ContextLoop`
over a store bound to that caller, so the SQL of every context read and write names the
caller. ``sediment.workspace`` builds it with the database's memories and tokens.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sediment.context import ContextLoop, ContextSettings
from sediment.embed import Embedder
from sediment.pg.context import PgContextStore

MAX_LOOPS = 256
NOBODY = "-"
"""No actor can be named this (actor names start with a letter or digit): the shared
loop's store, which only ``health`` reads, is bound to it and so holds no rows."""


def _in_own_loop(name: str) -> Callable[..., dict[str, Any]]:
    """``ContextLoop.<name>(actor, ...)`` run in the actor's own loop."""
    def call(self: TeamContextLoop, actor: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = getattr(self.of(actor), name)(actor, *args, **kwargs)
        return out

    call.__name__ = name
    return call


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

    store_context = _in_own_loop("store_context")
    store_iteration_result = _in_own_loop("store_iteration_result")
    mark_useful = _in_own_loop("mark_useful")
    get_relevant_context = _in_own_loop("get_relevant_context")
    get_iteration_history = _in_own_loop("get_iteration_history")
    get_skills = _in_own_loop("get_skills")
    import_skills = _in_own_loop("import_skills")
    summarize_old_context = _in_own_loop("summarize_old_context")
    prune = _in_own_loop("prune")
    stats = _in_own_loop("stats")

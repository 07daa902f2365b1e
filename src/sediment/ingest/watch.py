"""Watch the sources of a compile and call back once their files settle after a change.

Polling, not OS notifications: it behaves the same on every platform and filesystem
(network mounts, containers), costs one directory walk and a ``stat`` per file each
``interval``, and needs no dependency. A change is acted on once nothing has changed for
``debounce`` seconds, so an editor's save-rename-chmod or a ``git checkout`` of many files
gives one sync. ``stop`` ends the loop within one poll (the CLI sets it on Ctrl-C and SIGTERM).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from sediment.ingest.connectors import SourceRoot
from sediment.ingest.discover import discover

__all__ = ["Snapshot", "snapshot", "watch"]

Snapshot = tuple[tuple[str, int, int], ...]


def snapshot(sources: Sequence[SourceRoot]) -> Snapshot:
    """(path, size, mtime_ns) of every file the sources' globs select, in order."""
    items = []
    for src in sources:
        for rel in discover(src.root, src.include, src.exclude):
            try:
                st = (src.root / rel).stat()
                items.append((src.shown(rel.as_posix()), st.st_size, st.st_mtime_ns))
            except OSError:
                items.append((src.shown(rel.as_posix()), -1, -1))
    return tuple(items)


def watch(sources: Sequence[SourceRoot], on_change: Callable[[], None], *,
          stop: threading.Event, interval: float = 1.0, debounce: float = 0.5,
          max_changes: int | None = None, since: Snapshot | None = None) -> int:
    """Call ``on_change`` after each settled change until ``stop`` is set (or after
    ``max_changes`` calls); returns how many times it was called.

    ``since`` is the state to compare with first (default: the files as they are now); take
    it before a sync that precedes the watch, so an edit made during that sync is seen.
    """
    calls = 0
    last = snapshot(sources) if since is None else since
    while not stop.wait(interval):
        now = snapshot(sources)
        if now == last:
            continue
        while not stop.wait(debounce):
            settled = snapshot(sources)
            if settled == now:
                break
            now = settled
        if stop.is_set():
            break
        last = now
        on_change()
        calls += 1
        if max_changes is not None and calls >= max_changes:
            break
    return calls

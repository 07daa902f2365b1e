"""Use counts gathered in memory and written as one usage event per store and flush.

A recall must not rewrite a layer (DESIGN.md, "Counters are batched events"): each use is
added here, and ``flush`` appends one ``meta.memory_use`` event per (actor, store) with
the counts since the last flush. Events carry increments, so several servers flushing into
the same layers still sum to the exact count. A crash loses at most the uses since the
last flush (the flush interval); a failed append puts the counts back for the next one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from sediment.memory.model import MemoryRef

Pending = dict[tuple[str, str], dict[int, list[int]]]
"""(actor, store) -> chunk id -> [count, last used ms]."""


class UsageBuffer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: Pending = {}

    def add(self, actor: str, refs: Iterable[MemoryRef], now_ms: int) -> None:
        with self._lock:
            for ref in refs:
                slot = self._pending.setdefault((actor, ref.store), {}).setdefault(
                    ref.id, [0, 0])
                slot[0] += 1
                slot[1] = max(slot[1], now_ms)

    def pending(self, actor: str, ref: MemoryRef) -> tuple[int, int | None]:
        with self._lock:
            slot = self._pending.get((actor, ref.store), {}).get(ref.id)
        return (slot[0], slot[1]) if slot else (0, None)

    def take(self) -> Pending:
        with self._lock:
            out, self._pending = self._pending, {}
        return out

    def put_back(self, taken: Pending) -> None:
        with self._lock:
            for key, uses in taken.items():
                mine = self._pending.setdefault(key, {})
                for cid, (count, last) in uses.items():
                    slot = mine.setdefault(cid, [0, 0])
                    slot[0] += count
                    slot[1] = max(slot[1], last)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._pending.values())


class Flusher:
    """Calls ``flush`` every ``interval`` seconds on a daemon thread until stopped."""

    def __init__(self, flush: Callable[[], object], interval: float) -> None:
        self._flush = flush
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sediment-memory-usage",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._flush()
            except Exception:  # the next flush retries; counts were put back
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 5)

"""Access counts gathered in memory and written with the next commit (DESIGN.md,
"Counters are batched events").

A retrieval must not rewrite the store (the latency budget, and a read that writes is a
surprise): each item returned is counted here, and the service adds one
``meta.context_use`` event with the counts since the last write to its next commit
(``store_context``, ``store_iteration_result``, ``mark_useful``, a lifecycle pass), or
on its own at ``flush`` (server shutdown). Events carry increments, so servers sharing a
store still sum to the exact count; a crash loses at most the uses since the last write.
"""

from __future__ import annotations

import threading
import time

Pending = dict[int, list[int]]
"""item id -> [count, last accessed ms]."""


class UseBuffer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: Pending = {}

    def add(self, item: int, now_ms: int | None = None) -> None:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        with self._lock:
            slot = self._pending.setdefault(item, [0, 0])
            slot[0] += 1
            slot[1] = max(slot[1], now)

    def pending(self, item: int) -> tuple[int, int]:
        """(count, last accessed ms) not written yet; (0, 0) for none."""
        with self._lock:
            slot = self._pending.get(item)
        return (slot[0], slot[1]) if slot else (0, 0)

    def take(self) -> Pending:
        with self._lock:
            out, self._pending = self._pending, {}
        return out

    def put_back(self, taken: Pending) -> None:
        with self._lock:
            for cid, (count, last) in taken.items():
                slot = self._pending.setdefault(cid, [0, 0])
                slot[0] += count
                slot[1] = max(slot[1], last)

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

"""Use counts gathered in memory and written with a later commit (counters are batched
events, so a read never writes).

A read must not rewrite the store (the latency budget, and a read that writes is a
surprise), so memories and context items count their uses here and append one use event with
the counts since the last write. Events carry increments, so servers sharing a store still
sum to the exact count; a crash loses at most the uses since the last write, and a failed
append puts its counts back for the next one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class UseCounts(Generic[K]):
    """``key`` -> [count, last used ms], safe across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[K, list[int]] = {}

    def add(self, key: K, now_ms: int | None = None) -> None:
        self.put_back({key: [1, int(time.time() * 1000) if now_ms is None else now_ms]})

    def pending(self, key: K) -> tuple[int, int]:
        """(count, last used ms) not written yet; (0, 0) for none."""
        with self._lock:
            slot = self._pending.get(key)
        return (slot[0], slot[1]) if slot else (0, 0)

    def take(self) -> dict[K, list[int]]:
        with self._lock:
            out, self._pending = self._pending, {}
        return out

    def put_back(self, taken: dict[K, list[int]]) -> None:
        with self._lock:
            for key, (count, last) in taken.items():
                slot = self._pending.setdefault(key, [0, 0])
                slot[0] += count
                slot[1] = max(slot[1], last)

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

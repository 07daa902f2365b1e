"""Memories' use counts are flushed on a clock (``sediment.store.uses`` gathers them): one
``meta.memory_use`` event per (actor, store) every interval, so a crash loses at most the
uses of one interval."""

from __future__ import annotations

import threading
from collections.abc import Callable


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

"""Progress lines on stderr, stamped with the seconds since the run started."""

from __future__ import annotations

import sys
import time

_START = time.perf_counter()


def log(message: str) -> None:
    print(f"[bench {time.perf_counter() - _START:7.1f}s] {message}", file=sys.stderr, flush=True)


def elapsed() -> float:
    return time.perf_counter() - _START

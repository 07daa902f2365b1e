"""Latency samples and their summary statistics (seconds in, milliseconds out)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Stats:
    """Wall-clock samples of one operation, in seconds, warm-up excluded."""

    samples: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def p50(self) -> float:
        return float(np.median(self.samples))

    @property
    def p99(self) -> float:
        return float(np.percentile(self.samples, 99))

    @property
    def best(self) -> float:
        return float(min(self.samples))

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples))


def repeat(fn: Callable[[int], object], n: int, *, warmup: int = 3) -> Stats:
    """Call ``fn(i)`` ``warmup`` times untimed, then ``n`` times timed one by one."""
    for i in range(warmup):
        fn(i)
    gc.collect()
    out: list[float] = []
    for i in range(n):
        t = time.perf_counter()
        fn(warmup + i)
        out.append(time.perf_counter() - t)
    return Stats(tuple(out))


def once(fn: Callable[[], object]) -> float:
    """Seconds one call takes."""
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def repeat_with_setup(fn: Callable[[int], object], setup: Callable[[], object], n: int,
                      *, warmup: int = 1) -> Stats:
    """Like ``repeat`` but runs ``setup()`` untimed before every call."""
    for i in range(warmup):
        setup()
        fn(i)
    gc.collect()
    out: list[float] = []
    for i in range(n):
        setup()
        t = time.perf_counter()
        fn(warmup + i)
        out.append(time.perf_counter() - t)
    return Stats(tuple(out))


def interleaved(fns: list[Callable[[int], object]], n: int, *, warmup: int = 3
                ) -> list[Stats]:
    """Time several operations in turn on each input, so that a load change on the machine
    hits all of them alike: every operation on input ``i``, in an order shuffled per input
    (seeded, so runs repeat). The order matters when operations share caches: the first to
    see an input pays for bringing its data (an index's pages for that query vector, a
    term's postings) into memory and the later ones find it there, so a fixed order
    charges the earlier operation of every pair (at 1M chunks over PostgreSQL, the same
    HNSW query measured 15.3 ms run first and 7.2 ms run second), and so does any fixed
    rotation when several operations touch the same data; shuffled, each is first as often
    as the others in expectation."""
    for i in range(warmup):
        for fn in fns:
            fn(i)
    gc.collect()
    out: list[list[float]] = [[] for _ in fns]
    rng = np.random.default_rng(20240601)
    for i in range(n):
        for j in rng.permutation(len(fns)).tolist():
            t = time.perf_counter()
            fns[j](warmup + i)
            out[j].append(time.perf_counter() - t)
    return [Stats(tuple(s)) for s in out]


def paired_difference(a: Stats, b: Stats) -> float:
    """Median of the per-input differences ``a_i - b_i`` (for interleaved samples)."""
    return float(np.median(np.subtract(a.samples, b.samples)))

"""``python -m bench.context_latency``: the seed's latency budget for agent loops.

The store is filled with ``--active`` items over ``--runs-of`` iterations, plus
``--archived`` items moved to an archive layer (bulk appends of 500 items with their
store events; vectors from the hash embedder, so filling is quick). Then it times, with
the ``--embedder`` (default MiniLM, query embedding included), the first call of
``get_relevant_context`` (``cold_ms``: it folds the event log and builds the index, once
per process), then a loop's pattern: per iteration ``store_iteration_result`` and
``store_context`` (``--writes``), then ``get_relevant_context`` with a 2,000-token block
and with the archive searched (``--queries``), so every query follows a write.
Prints medians and p99 in milliseconds as JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from sediment.context import ContextLoop, FileContextStore, NewEvent, NewItem
from sediment.context.state import ITEM_EVENT
from sediment.embed import Embedder, HashEmbedder, MiniLMEmbedder

TOPICS = ["login form", "database migration", "search endpoint", "CI pipeline", "cache",
          "payment webhook", "email sender", "rate limiter", "PDF export", "admin page"]


def _text(i: int) -> str:
    return (f"Iteration {i} worked on the {TOPICS[i % len(TOPICS)]}: changed module_{i}.py "
            f"and added {i % 7} tests. Result {'ok' if i % 5 else 'failed with error E'}{i}.")


def _fill(store: FileContextStore, n: int, start: int, iterations: int) -> list[int]:
    emb = HashEmbedder()
    ids: list[int] = []
    for lo in range(start, start + n, 500):
        hi = min(lo + 500, start + n)
        texts = [_text(i) for i in range(lo, hi)]
        vecs = emb.embed(texts)
        items = [NewItem("context.iteration", t, "mcp", v) for t, v in zip(texts, vecs,
                                                                            strict=True)]
        events = [NewEvent(ITEM_EVENT, {
            "event": "store", "item": -1 - k, "actor": "bench", "project": "bench",
            "run_id": "default", "iteration": (lo + k) * iterations // max(1, start + n),
            "type": "iteration", "tags": [], "metadata": {}, "embedded": True,
            "summary_of": []}, (-1 - k,)) for k in range(hi - lo)]
        ids += store.append(items, events)
    return ids


def _ms(samples: list[float]) -> dict[str, float]:
    arr = np.asarray(samples) * 1000
    return {"median": round(float(np.median(arr)), 2),
            "p99": round(float(np.percentile(arr, 99)), 2), "n": len(samples)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--active", type=int, default=5000)
    ap.add_argument("--archived", type=int, default=45000)
    ap.add_argument("--writes", type=int, default=100)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    args = ap.parse_args(argv)
    embedder: Embedder = MiniLMEmbedder() if args.embedder == "minilm" else HashEmbedder()
    embedder.embed(["warm up"])
    out: dict[str, Any] = {"args": vars(args)}
    with tempfile.TemporaryDirectory() as tmp:
        store = FileContextStore(Path(tmp) / "context", profile=embedder.profile.to_dict(),
                                 dim=embedder.profile.dim)
        if args.archived:
            old = _fill(store, args.archived, 0, 10)
            store.archive(old, "2026-01-01")
        _fill(store, args.active, args.archived, 100)
        loop = ContextLoop(store, embedder, project="bench", cache_dir=Path(tmp) / "cache")
        timings: dict[str, list[float]] = {"store_context": [], "store_iteration_result": [],
                                           "get_relevant_context": [],
                                           "get_relevant_context_archived": []}

        def timed(key: str, fn: Any, *a: Any, **kw: Any) -> float:
            t = time.perf_counter()
            fn(*a, **kw)
            took = time.perf_counter() - t
            timings[key].append(took)
            return took

        # the first call of each kind folds the log and builds the index (once per process)
        out["cold_ms"] = {key: round(timed(key, loop.get_relevant_context, "bench", "cold start",
                                           include_archived=archived) * 1000, 1)
                          for key, archived in (("get_relevant_context", False),
                                                ("get_relevant_context_archived", True))}
        for v in timings.values():
            v.clear()
        # then the loop's own pattern: store what happened, then ask for context
        for i in range(max(args.writes, args.queries)):
            topic = TOPICS[i % 10]
            if i < args.writes:
                timed("store_iteration_result", loop.store_iteration_result, "bench", 101 + i,
                      f"Touched the {topic}.", True)
                timed("store_context", loop.store_context, "bench",
                      f"Note {i}: the {topic} needs a retry.", "task")
            if i < args.queries:
                q = f"why did the {topic} fail in iteration {i}"
                timed("get_relevant_context", loop.get_relevant_context, "bench", q,
                      max_tokens=2000)
                timed("get_relevant_context_archived", loop.get_relevant_context, "bench", q,
                      include_archived=True)
        out["ms"] = {k: _ms(v) for k, v in timings.items()}
        out["size_mb"] = round(store.size_bytes() / 2**20, 1)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m bench.context_writes``: where a progressive-context write's time goes, for
three layouts of the same store side by side.

Three context stores are filled alike with ``--active`` items, each with its store event
(hash embedder, so filling is quick and the write is the store's alone): ``f32, row per
event`` is the layout before (every event a zero row of its own), ``f32, shared row`` gives
the events one zero row, ``i8, shared row`` is what a new store now writes. Then
``--writes`` rounds of ``store_context`` go to each store in turn (alternating, so a slow
spell of the shared machine hits all three), each split into the new file's write, its
fsync, the directory's fsync and the rest (embedding, credential check, locks, ids, the
rename, re-reading the appended chunks), timed where the store calls them. Prints medians
and p99 in milliseconds, and each file's size, as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.append_bench import PHASES, _phase_clock, _row_per_event
from bench.context_latency import TOPICS, _fill
from sediment.context import ContextLoop, FileContextStore
from sediment.embed import HashEmbedder

LAYOUTS = ("f32, row per event", "f32, shared row", "i8, shared row")


def _ms(samples: list[float]) -> dict[str, float]:
    arr = np.asarray(samples) * 1000
    return {"median": round(float(np.median(arr)), 2),
            "p99": round(float(np.percentile(arr, 99)), 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--active", type=int, default=5000)
    ap.add_argument("--writes", type=int, default=100)
    args = ap.parse_args(argv)
    emb = HashEmbedder()
    unit = emb.profile.to_dict()
    out: dict[str, Any] = {"args": vars(args)}
    with tempfile.TemporaryDirectory() as tmp:
        loops: dict[str, ContextLoop] = {}
        stores: dict[str, FileContextStore] = {}
        for n, layout in enumerate(LAYOUTS):
            profile = unit if layout.startswith("i8") else {**unit, "output_norm": "none"}
            store = FileContextStore(Path(tmp) / f"s{n}", profile=profile, dim=emb.profile.dim)
            with _layout(layout):
                _fill(store, args.active, 0, 100)
            stores[layout] = store
            loops[layout] = ContextLoop(store, emb, project="bench",
                                        cache_dir=Path(tmp) / f"cache{n}")
            loops[layout].get_relevant_context("bench", "warm up")
        times = {layout: {p: [] for p in (*PHASES, "whole")} for layout in LAYOUTS}
        for i in range(args.writes + 1):
            for layout in LAYOUTS:
                parts: dict[str, list[float]] = {p: [] for p in PHASES}
                with _layout(layout), _phase_clock(parts):
                    t = time.perf_counter()
                    loops[layout].store_context(
                        "bench", f"Note {i}: the {TOPICS[i % 10]} needs a retry.", "task")
                    whole = time.perf_counter() - t
                if i == 0:
                    continue  # warm-up
                got = times[layout]
                got["whole"].append(whole)
                for p in PHASES[:3]:
                    got[p].append(sum(parts[p]))
                got["rest"].append(whole - sum(sum(parts[p]) for p in PHASES[:3]))
        out["ms"] = {layout: {p: _ms(v) for p, v in t.items()} for layout, t in times.items()}
        out["size_mb"] = {layout: round(s.size_bytes() / 2**20, 2)
                          for layout, s in stores.items()}
    print(json.dumps(out, indent=2))
    return 0


@contextlib.contextmanager
def _layout(layout: str) -> Iterator[None]:
    if layout.endswith("row per event"):
        with _row_per_event():
            yield
    else:
        yield


if __name__ == "__main__":
    raise SystemExit(main())

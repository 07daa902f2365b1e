"""``python -m bench.memory_latency``: save, recall and forget_all at 10,000 memories.

One actor's user store is filled with ``--memories`` distinct memories (embedded in
batches, appended 500 per commit, as saves without a context write them), then
``--saves`` saves through ``MemoryService.save`` (the real path: embedding with the
default model, the dedup search, the credential check and the append), ``--recalls``
recalls (query embedding included),
and one ``forget_all``. Each save's parts are timed too, so the append's share (which
rewrites the layer today) is visible, and so is the first recall after a write, which
rebuilds the changed file's lexical index (a derived cache keyed by the file).

Beside each wall time, the process's CPU time for the same call (``*_cpu_ms``): on a host
shared with other work, wall time includes waiting for a core, CPU time does not (neither
includes waiting for the disk, which a save's fsyncs do).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality.__main__ import DEFAULT_CACHE, make_embedder
from sediment.embed import Embedder, HashEmbedder, MiniLMEmbedder
from sediment.memory import FileMemoryStore, MemoryService, Scope
from sediment.memory.model import memory_kind
from sediment.memory.store import NewMemory, Place
from sediment.store import LayerSet

SUBJECTS = ["the billing service", "the search API", "the user", "the mobile app",
            "the data pipeline", "the auth service", "the web frontend", "the CI job",
            "the nightly export", "the admin console"]
FACTS = ["runs on port {n}", "keeps {n} days of logs", "retries failed calls {n} times",
         "was last migrated in sprint {n}", "allows {n} requests per minute",
         "needs {n} GB of memory", "has {n} open issues tagged urgent",
         "is owned by team number {n}"]


def text(i: int) -> str:
    return f"{SUBJECTS[i % 10]} {FACTS[(i // 10) % 8].format(n=1000 + i)} (note {i})"


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) * 1e3


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.memory_latency", description=__doc__)
    p.add_argument("--memories", type=int, default=10_000)
    p.add_argument("--saves", type=int, default=100)
    p.add_argument("--recalls", type=int, default=200)
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--embedder", default="minilm", choices=("minilm", "hash"),
                   help="hash: no model, to see what the store and search cost alone")
    p.add_argument("--element-type", default=None, choices=("i8", "f32"),
                   help="how the memory file stores vectors (default: the store's choice, "
                        "i8 for unit-vector embedders)")
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args(argv)
    bulk = make_embedder(opts.embedder, opts.cache)
    model: Embedder = MiniLMEmbedder() if opts.embedder == "minilm" else HashEmbedder(384)
    actor = "bench"
    with tempfile.TemporaryDirectory(prefix="sediment-memory-latency-") as tmp:
        root = Path(tmp)
        (root / "project").mkdir()
        store = FileMemoryStore(LayerSet.from_directory(root / "project"), root / "data",
                                profile=model.profile.to_dict(), dim=model.profile.dim,
                                embedder_metadata=model.metadata(),
                                element_type=opts.element_type)
        t = time.perf_counter()
        for start in range(0, opts.memories, 500):
            texts = [text(i) for i in range(start, min(start + 500, opts.memories))]
            vecs = bulk.embed(texts)
            store.append(Place.USER, actor, [
                NewMemory(memory_kind("fact", actor), s, "mcp", 0.7, (), v)
                for s, v in zip(texts, vecs, strict=True)], [])
        build_s = time.perf_counter() - t
        built_bytes = store.actor_path(actor).stat().st_size
        svc = MemoryService(store, model)
        model.embed(["warm up"])
        svc.recall(actor, "warm up the lexical index")
        saves: list[float] = []
        saves_cpu: list[float] = []
        after_write: list[float] = []
        parts: dict[str, list[float]] = {"embed": [], "dedup search": [], "append": []}
        for i in range(opts.saves):
            content = f"the queue worker {FACTS[i % 8].format(n=50_000 + i)} (new {i})"
            t, c = time.perf_counter(), time.process_time()
            out = svc.save(actor, content, "fact")
            saves.append(time.perf_counter() - t)
            saves_cpu.append(time.process_time() - c)
            assert out["status"] in ("created", "updated")
            if i % 10 == 0:
                t = time.perf_counter()
                svc.recall(actor, f"queue worker case {i}")
                after_write.append(time.perf_counter() - t)
        for i in range(min(opts.saves, 20)):
            content = f"the cron runner {FACTS[i % 8].format(n=70_000 + i)} (part {i})"
            t = time.perf_counter()
            vec = model.embed([content])[0]
            parts["embed"].append(time.perf_counter() - t)
            t = time.perf_counter()
            store.search(actor, Scope.USER, content, vec, ("fact",), 5, lexical=False)
            parts["dedup search"].append(time.perf_counter() - t)
            t = time.perf_counter()
            store.append(Place.USER, actor, [NewMemory(memory_kind("fact", actor), content,
                                                       "mcp", 0.7, (), vec)], [])
            parts["append"].append(time.perf_counter() - t)
        svc.recall(actor, "warm up the lexical index again")
        recalls: list[float] = []
        recalls_cpu: list[float] = []
        for i in range(opts.recalls):
            query = f"how many {['requests', 'retries', 'logs', 'issues'][i % 4]} does " \
                    f"{SUBJECTS[i % 10]} allow, case {i}"
            t, c = time.perf_counter(), time.process_time()
            svc.recall(actor, query)
            recalls.append(time.perf_counter() - t)
            recalls_cpu.append(time.process_time() - c)
        t = time.perf_counter()
        svc.flush()
        flush_s = time.perf_counter() - t
        t = time.perf_counter()
        gone = svc.forget_all(actor, confirm=True)["forgotten"]
        forget_s = time.perf_counter() - t
        size = store.actor_path(actor).stat().st_size
    result: dict[str, Any] = {
        "embedder": opts.embedder, "memories": opts.memories, "build_seconds": build_s,
        "save_ms": {"p50": pct(saves, 50), "p99": pct(saves, 99)},
        "save_cpu_ms": {"p50": pct(saves_cpu, 50), "p99": pct(saves_cpu, 99)},
        "save_parts_ms": {k: {"p50": pct(v, 50), "p99": pct(v, 99)} for k, v in parts.items()},
        "recall_ms": {"p50": pct(recalls, 50), "p99": pct(recalls, 99)},
        "recall_cpu_ms": {"p50": pct(recalls_cpu, 50), "p99": pct(recalls_cpu, 99)},
        "first_recall_after_a_save_ms": {"p50": pct(after_write, 50),
                                         "max": max(after_write) * 1e3},
        "flush_ms": flush_s * 1e3, "forget_all_seconds": forget_s, "forgotten": gone,
        "element_type": store.element_type, "layer_bytes_at_build": built_bytes,
        "layer_bytes": size}
    print(json.dumps(result, indent=2))
    if opts.json:
        opts.json.write_text(json.dumps(result, indent=2))



if __name__ == "__main__":
    main()

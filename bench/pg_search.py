"""``python -m bench.pg_search``: search latency over PostgreSQL beside the layer files.

One synthetic corpus (``bench.synthetic``: unit vectors, Zipf texts) is written as a base
layer file, then pushed into a PostgreSQL project (``sediment.pg.push``, which also builds
the HNSW index). The same queries then run through the same service call
(``sediment.ops.run_search``) against both backends, interleaved query by query so that
load on the shared machine hits every variant alike: vector search exact and approximate
(the file store's FAISS HNSW index; pgvector's HNSW index), and hybrid (vector + BM25).
Recall@10 of each approximate variant is measured against its backend's exact answer.

    python -m bench.pg_search --rows 100000 --queries 200 [--store URL] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import pg_server, synthetic
from bench.machine import describe
from bench.timing import Stats, interleaved
from sediment.format import encode_layer
from sediment.ops import run_search
from sediment.pg import PgStore, parse_store_url, push
from sediment.search import SearchRequest
from sediment.search.ann import ensure_index
from sediment.store import LayerSet, LayerStore


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.pg_search", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--store", default=None, help="PostgreSQL URL (default: a private "
                                                  "pgserver in a temporary directory)")
    p.add_argument("--json", type=Path, default=None)
    return p.parse_args(argv)


def _search(store: LayerStore, request: SearchRequest, vec: np.ndarray) -> list[int]:
    return [h.chunk.id for h in run_search(store, request, query_vec=vec).hits]


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    command = "python -m bench.pg_search " + " ".join(argv if argv is not None else sys.argv[1:])
    machine = describe(command)
    vectors = synthetic.unit_vectors(opts.rows, opts.dim, seed=1)
    texts = synthetic.texts(opts.rows, seed=2)
    queries = synthetic.unit_vectors(opts.queries + opts.warmup, opts.dim, seed=3)
    qtexts = synthetic.query_texts(opts.queries + opts.warmup, seed=4)
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="sediment-pg-bench-") as tmp:
        base = Path(tmp) / "AGENTS.db"
        base.write_bytes(encode_layer(synthetic.chunks(texts), vectors,
                                      metadata=synthetic.layer_metadata(opts.dim, opts.rows)))
        t = time.perf_counter()
        ensure_index(base, min_rows=1)
        timings["file_hnsw_build_s"] = time.perf_counter() - t
        files = LayerSet({"base": base})
        url = pg_server.store_url(opts.store)
        with PgStore(parse_store_url(url, f"bench-{opts.rows}"),
                     statement_timeout_ms=0) as pg:
            t = time.perf_counter()
            push(pg, files, replace_base=True)
            timings["pg_push_and_hnsw_build_s"] = time.perf_counter() - t
            variants: dict[str, Callable[[int], Any]] = {}
            answers: dict[str, list[list[int]]] = {}
            for name, store in (("files", files), ("pg", pg)):
                for label, request in (
                        ("vector exact", SearchRequest(k=opts.k, mode="vector", exact=True)),
                        ("vector HNSW", SearchRequest(k=opts.k, mode="vector")),
                        ("hybrid exact", SearchRequest(k=opts.k, mode="hybrid", exact=True)),
                        ("hybrid HNSW", SearchRequest(k=opts.k, mode="hybrid"))):
                    key = f"{name}: {label}"
                    answers[key] = []

                    def run(i: int, store: LayerStore = store, request: SearchRequest = request,
                            key: str = key) -> object:
                        from dataclasses import replace

                        got = _search(store, replace(request, text=qtexts[i]) if request.mode
                                      == "hybrid" else request, queries[i])
                        if i >= opts.warmup:
                            answers[key].append(got)
                        return got

                    variants[key] = run
            stats = interleaved(list(variants.values()), opts.queries, warmup=opts.warmup)
    rows = []
    for (key, s) in zip(variants, stats, strict=True):
        backend, label = key.split(": ")
        exact = answers[f"{backend}: {label.replace('HNSW', 'exact')}"]
        recall = float(np.mean([len(set(a) & set(b)) / max(len(b), 1)
                                for a, b in zip(answers[key], exact, strict=True)]))
        rows.append(_row(key, s, recall))
    print(f"{opts.rows:,} chunks x {opts.dim} dims, {opts.queries} queries, k = {opts.k}")
    print("| backend: search | p50 ms | p99 ms | recall@10 vs exact |")
    print("|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['variant']} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['recall']:.3f} |")
    print(", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    if opts.json:
        opts.json.parent.mkdir(parents=True, exist_ok=True)
        opts.json.write_text(json.dumps({"machine": machine.__dict__ if hasattr(
            machine, "__dict__") else str(machine), "rows": rows, "timings": timings},
            indent=2, default=str))
    return 0


def _row(key: str, s: Stats, recall: float) -> dict[str, Any]:
    return {"variant": key, "p50_ms": s.p50 * 1e3, "p99_ms": s.p99 * 1e3, "recall": recall}


if __name__ == "__main__":
    sys.exit(main())

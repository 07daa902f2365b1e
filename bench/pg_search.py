"""``python -m bench.pg_search``: search latency over PostgreSQL beside the layer files.

One corpus is written as a base layer file, then pushed into a PostgreSQL project
(``sediment.pg.push``, which also builds the HNSW index). The vectors come from a
workload of ``bench.peers.data`` in which queries sit near stored vectors, as real ones
do: ``unclustered`` (the default: a 32-dim latent structure lifted into 384 dims, each
query a stored vector's latent point moved by noise) or ``mixture`` (Gaussian clusters);
``random`` keeps the old isotropic unit vectors, where no vector has neighbours and every
graph index scores a recall near 0.1. Texts are ``bench.synthetic``'s Zipf texts.

The same queries then run through the same service call (``sediment.ops.run_search``)
against both backends, interleaved query by query so that load on the shared machine hits
every variant alike: vector search exact and approximate (the file store's FAISS HNSW
index; pgvector's HNSW index), hybrid (vector + BM25), and BM25 alone. Recall@10 of each
approximate variant is measured against its backend's exact answer (against the file
store's when the PostgreSQL exact variants are left out with ``--no-pg-exact``: both
backends rank alike, which the agreement column shows when both run); BM25 alone against
the file store's BM25.

``--workdir`` keeps the layer file, its index and the private server's data for the next
run, so a 1M-row corpus is loaded once (``--build-only``) and searched later:

    python -m bench.pg_search --rows 100000 --queries 200 [--store URL] [--json out.json]
    python -m bench.pg_search --rows 1000000 --workdir build/bench/pg-1m --build-only
    python -m bench.pg_search --rows 1000000 --workdir build/bench/pg-1m --no-pg-exact
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench import pg_server, synthetic
from bench.machine import describe
from bench.peers import data
from bench.timing import interleaved
from sediment.errors import SedimentError
from sediment.format import LayerFile, encode_layer
from sediment.ops import run_search
from sediment.ops.query import unit_rows
from sediment.pg import PgStore, connect, parse_store_url, push
from sediment.pg.search import ensure_vector_index, index_name
from sediment.search import SearchRequest
from sediment.search.ann import ensure_index
from sediment.store import LayerName, LayerSet, LayerStore

F32 = npt.NDArray[np.float32]
WORKLOADS = ("unclustered", "mixture", "random")


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.pg_search", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--workload", choices=WORKLOADS, default="unclustered")
    p.add_argument("--store", default=None, help="PostgreSQL URL (default: a private "
                                                  "pgserver)")
    p.add_argument("--workdir", type=Path, default=None,
                   help="keep the layer file, its index and the private server's data here "
                        "and reuse them (default: a temporary directory)")
    p.add_argument("--build-only", nargs="?", const="both", choices=("both", "files", "pg"),
                   help="load both backends (or one: two processes load them side by side) "
                        "and build their indexes, then stop")
    p.add_argument("--no-pg-exact", dest="pg_exact", action="store_false",
                   help="leave out PostgreSQL's exact scans (seconds per query at 1M)")
    p.add_argument("--before", metavar="REV", default=None,
                   help="also run PostgreSQL's approximate searches with the search module "
                        "(src/sediment/pg/search.py) of git revision REV, interleaved with "
                        "today's: a before/after comparison under the same load")
    p.add_argument("--modes", default=",".join(MODES),
                   help="the searches to run, of " + ", ".join(MODES) + " (all by default); "
                        "with lexical alone no approximate index is built or needed")
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args(argv)
    opts.modes = [m.strip() for m in opts.modes.split(",") if m.strip()]
    unknown = sorted(set(opts.modes) - set(MODES))
    if unknown:
        p.error(f"--modes: unknown {', '.join(unknown)} (choose from {', '.join(MODES)})")
    return opts


def module_at(rev: str, path: str = "src/sediment/pg/search.py") -> types.ModuleType:
    """The module at ``path`` as of git revision ``rev`` (imports resolve to today's
    package, which must still provide what it imports)."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=root, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType(f"pg_search_at_{rev}")
    module.__dict__["__source__"] = source
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
    return module


class Before:
    """A PostgreSQL store searched by an older search module, through the same service
    path as today's (``ops.run_search``'s layer reads, then the module's ``run``)."""

    def __init__(self, store: PgStore, module: types.ModuleType) -> None:
        self.store, self.module = store, module
        if "lex_tf ?|" in _source(module):
            _restore_terms_index(store)
        if "JOIN postings" in _source(module):
            _restore_postings(store)

    def search(self, request: SearchRequest, vec: F32 | None) -> list[int]:
        normalised = unit_rows(self.store, request.layers)
        result = self.module.run(self.store, request, vec, normalised=normalised)
        return [h.chunk.id for h in result.hits]


def _source(module: types.ModuleType) -> str:
    return str(module.__dict__.get("__source__", ""))


def _restore_terms_index(store: PgStore) -> None:
    """The GIN index of ``lex_tf`` that search modules before migration 0060 read their
    BM25 candidates through (0060 dropped it), so an older module runs as it ran."""
    t = time.perf_counter()
    with store.cursor() as cur:
        cur.execute("SET statement_timeout = 0")
        cur.execute("CREATE INDEX IF NOT EXISTS chunks_terms ON chunks USING gin (lex_tf)")
    _log(f"the old modules' GIN index of lex_tf present after {time.perf_counter() - t:.0f} s")


def _restore_postings(store: PgStore) -> None:
    """The postings table (migration 0060) that search modules before migration 0074 read
    BM25 from (0074 packed it into blocks and dropped it), filled from the chunks as 0060
    filled it and vacuumed, so an older module's lexical side is the index-only scan it
    was. Nothing keeps it current: it is for reading a loaded corpus."""
    t = time.perf_counter()
    with connect(store.url, statement_timeout_ms=0, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('postings')").fetchone() != (None,):
            return
        conn.execute("SET work_mem = '256MB'")
        conn.execute("CREATE TABLE postings (project text NOT NULL, layer text NOT NULL, "
                     "term text NOT NULL, id bigint NOT NULL, tf integer NOT NULL, "
                     "len integer NOT NULL, kind text NOT NULL, "
                     "PRIMARY KEY (project, layer, term, id) INCLUDE (tf, len, kind))")
        conn.execute("INSERT INTO postings SELECT c.project, c.layer, t.key, c.id, "
                     "t.value::integer, c.lex_len, c.kind FROM chunks AS c, "
                     "jsonb_each_text(c.lex_tf) AS t ORDER BY 1, 2, 3, 4")
        conn.execute("VACUUM ANALYZE postings")
    _log(f"the old modules' postings table present after {time.perf_counter() - t:.0f} s")


def corpus(workload: str, rows: int, queries: int) -> tuple[F32, F32]:
    """Stored vectors and query vectors (384 dims, unit length)."""
    if workload == "unclustered":
        return data.unclustered(rows, queries)
    if workload == "mixture":
        return data.generate(rows, queries)
    return (synthetic.unit_vectors(rows, data.DIM, seed=1),
            synthetic.unit_vectors(queries, data.DIM, seed=3))


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _file_rows(path: Path) -> int:
    try:
        return LayerFile.open(path).embedding_info.rows
    except (OSError, SedimentError):  # absent or half-written: write it again
        return -1


def build_files(base: Path, vectors: F32, rows: int, timings: dict[str, float], *,
                index: bool = True) -> LayerSet:
    if _file_rows(base) != rows:
        t = time.perf_counter()
        tmp = base.with_suffix(".tmp")
        tmp.write_bytes(encode_layer(synthetic.chunks(synthetic.texts(rows, seed=2)), vectors,
                                     metadata=synthetic.layer_metadata(data.DIM, rows)))
        os.replace(tmp, base)
        timings["file_write_s"] = time.perf_counter() - t
        _log(f"layer file written in {timings['file_write_s']:.0f} s")
    if not index:
        return LayerSet({"base": base})
    t = time.perf_counter()
    ensure_index(base, min_rows=1)
    timings["file_hnsw_build_s"] = time.perf_counter() - t
    _log(f"file store index ready in {timings['file_hnsw_build_s']:.0f} s")
    return LayerSet({"base": base})


def _pg_rows(pg: PgStore) -> tuple[int, bool]:
    with pg.cursor() as cur:
        cur.execute("SELECT n_docs FROM layers WHERE project = %s AND layer = 'base'",
                    (pg.project,))
        row = cur.fetchone()
        cur.execute("SELECT 1 FROM pg_indexes WHERE indexname = ANY(%s)",
                    ([index_name(data.DIM, True, pg.project), index_name(data.DIM, True)],))
        return (int(row[0]) if row else 0), cur.fetchone() is not None


def build_pg(pg: PgStore, files: LayerSet, rows: int, timings: dict[str, float], *,
             index: bool = True) -> None:
    have, indexed = _pg_rows(pg)
    if have == rows and (indexed or not index):
        _log(f"PostgreSQL project already loaded{' and indexed' if indexed else ''}")
        return
    if have == rows:  # loaded by an earlier run whose index build was stopped: build only that
        _log("PostgreSQL project already loaded; building its HNSW index")
        t = time.perf_counter()
        ensure_vector_index(pg, data.DIM)
        timings["pg_hnsw_build_s"] = time.perf_counter() - t
        _log(f"PostgreSQL indexed in {timings['pg_hnsw_build_s']:.0f} s")
        return
    t = time.perf_counter()

    def copied(layer: str, n: int) -> None:
        timings["pg_copy_s"] = time.perf_counter() - t
        _log(f"PostgreSQL: {n:,} {layer} rows copied in {timings['pg_copy_s']:.0f} s; "
             "committing, ANALYZE, HNSW build")

    push(pg, files, replace_base=True, on_layer=copied)
    timings["pg_push_and_hnsw_build_s"] = time.perf_counter() - t
    timings["pg_commit_analyze_hnsw_build_s"] = (timings["pg_push_and_hnsw_build_s"]
                                                 - timings.get("pg_copy_s", 0.0))
    _log(f"PostgreSQL loaded and indexed in {timings['pg_push_and_hnsw_build_s']:.0f} s")


def _search(store: LayerStore | Before, request: SearchRequest, vec: F32 | None
            ) -> list[int]:
    if isinstance(store, Before):
        return store.search(request, vec)
    return [h.chunk.id for h in run_search(store, request, query_vec=vec).hits]


MODES = ("vector-exact", "vector", "hybrid-exact", "hybrid", "lexical")
REQUESTS = (("vector exact", SearchRequest(k=10, mode="vector", exact=True)),
            ("vector HNSW", SearchRequest(k=10, mode="vector")),
            ("hybrid exact", SearchRequest(k=10, mode="hybrid", exact=True)),
            ("hybrid HNSW", SearchRequest(k=10, mode="hybrid")),
            ("lexical", SearchRequest(k=10, mode="lexical")))


def measure(opts: argparse.Namespace, files: LayerSet, pg: PgStore, queries: F32,
            qtexts: list[str]) -> list[dict[str, Any]]:
    variants: dict[str, Callable[[int], Any]] = {}
    answers: dict[str, list[list[int]]] = {}
    stores: list[tuple[str, LayerStore | Before]] = [("files", files), ("pg", pg)]
    if opts.before:
        stores.append((f"pg@{opts.before}", Before(pg, module_at(opts.before))))
    for name, store in stores:
        for (label, request), mode in zip(REQUESTS, MODES, strict=True):
            if mode not in opts.modes:
                continue
            if name != "files" and "exact" in label and not opts.pg_exact:
                continue
            key = f"{name}: {label}"
            answers[key] = []
            request = replace(request, k=opts.k)

            def run(i: int, store: LayerStore | Before = store, request: SearchRequest = request,
                    key: str = key) -> object:
                if request.mode == "vector":
                    got = _search(store, request, queries[i])
                else:
                    got = _search(store, replace(request, text=qtexts[i]),
                                  None if request.mode == "lexical" else queries[i])
                if i >= opts.warmup:
                    answers[key].append(got)
                return got

            variants[key] = run
    stats = interleaved(list(variants.values()), opts.queries, warmup=opts.warmup)
    rows = []
    for key, s in zip(variants, stats, strict=True):
        backend, label = key.split(": ")
        ref = f"{backend}: {label.replace('HNSW', 'exact')}"
        if ref not in answers or label == "lexical":
            ref = f"files: {label.replace('HNSW', 'exact')}"
        row: dict[str, Any] = {"variant": key, "p50_ms": s.p50 * 1e3, "p99_ms": s.p99 * 1e3,
                               "recall": _recall(answers[key], answers[ref]),
                               "recall_against": ref}
        if backend != "files" and "exact" in label:
            row["same_as_files"] = _recall(answers[key], answers[f"files: {label}"])
        rows.append(row)
    return rows


def _recall(got: list[list[int]], truth: list[list[int]]) -> float:
    return float(np.mean([len(set(a) & set(b)) / max(len(b), 1)
                          for a, b in zip(got, truth, strict=True)]))


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    command = "python -m bench.pg_search " + " ".join(argv if argv is not None else sys.argv[1:])
    machine = describe(command)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    vectors, queries = corpus(opts.workload, opts.rows, opts.queries + opts.warmup)
    timings["generate_s"] = time.perf_counter() - t
    qtexts = synthetic.query_texts(len(queries), seed=4)
    with tempfile.TemporaryDirectory(prefix="sediment-pg-bench-") as tmp:
        work = opts.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        files = build_files(work / LayerName.BASE.file_name, vectors, opts.rows, timings,
                            index=opts.build_only != "pg" and (
                                opts.build_only is not None or set(opts.modes) != {"lexical"}))
        del vectors
        rows: list[dict[str, Any]] = []
        approx = opts.build_only is not None or set(opts.modes) != {"lexical"}
        if opts.build_only != "files":
            url = pg_server.store_url(opts.store, pgdata=work / "pgdata" if opts.workdir and
                                      opts.store is None else None)
            project = f"bench-{opts.workload}-{opts.rows}"
            with PgStore(parse_store_url(url, project), statement_timeout_ms=0) as pg:
                build_pg(pg, files, opts.rows, timings, index=approx)
                if not opts.build_only:
                    rows = measure(opts, files, pg, queries, qtexts)
    machine.load_end = os.getloadavg()
    print(f"{opts.rows:,} chunks ({opts.workload}) x {data.DIM} dims, {opts.queries} queries, "
          f"k = {opts.k}, load average {machine.load_start[0]:.1f} -> {machine.load_end[0]:.1f}")
    if rows:
        print("| backend: search | p50 ms | p99 ms | recall@10 | against |")
        print("|---|---:|---:|---:|---|")
        for r in rows:
            print(f"| {r['variant']} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
                  f"{r['recall']:.3f} | {r['recall_against']} |")
        for r in rows:
            if "same_as_files" in r:
                print(f"{r['variant']}: {r['same_as_files']:.3f} of its top {opts.k} "
                      "as the file store's")
    print(", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    if opts.json:
        opts.json.parent.mkdir(parents=True, exist_ok=True)
        opts.json.write_text(json.dumps({"machine": asdict(machine), "workload": opts.workload,
                                         "rows": opts.rows, "queries": opts.queries,
                                         "results": rows, "timings": timings},
                                        indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

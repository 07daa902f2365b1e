"""Run every benchmark in order and collect the results for the report."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench import (
    append_bench,
    bandwidth,
    compile_bench,
    first_query,
    hybrid_search,
    layerfiles,
    machine,
    memory,
    multilayer,
    opening,
    resources,
    synthetic,
    vector_search,
)
from bench.options import Options
from bench.progress import log

ELEMENT_TYPES = ("f32", "i8")
HYBRID_MAX_ROWS = 100_000


@dataclass(slots=True)
class SizeResult:
    rows: int
    generate_s: float
    """Random vectors, texts and ``Chunk`` objects for this size."""
    built: dict[str, layerfiles.BuiltLayer] = field(default_factory=dict)
    opens: dict[str, opening.OpenTimes] = field(default_factory=dict)
    vector: dict[str, vector_search.VectorLatency] = field(default_factory=dict)
    hybrid: dict[str, hybrid_search.HybridLatency] = field(default_factory=dict)
    memory: dict[str, memory.MemoryProbe] = field(default_factory=dict)


@dataclass(slots=True)
class Results:
    options: Options
    machine: machine.Machine
    workdir: Path
    bandwidth: bandwidth.Bandwidth | None = None
    sizes: list[SizeResult] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    splits: list[multilayer.SplitLatency] = field(default_factory=list)
    appends: list[append_bench.AppendLatency] = field(default_factory=list)
    compiles: list[compile_bench.CompileRun] = field(default_factory=list)
    embed: compile_bench.EmbedRun | None = None
    first_queries: list[first_query.FirstQuery] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _check_resources(opts: Options, workdir: Path, rows: int) -> str | None:
    free = resources.disk_free(workdir)
    need = resources.disk_needed(rows, opts.dim) + (1 << 30)
    if free < need:
        return (f"not enough free disk in {workdir}: {resources.gib(free)} free, about "
                f"{resources.gib(need)} needed for the f32 and i8 files")
    avail = resources.mem_available()
    need_mem = resources.memory_needed(rows, opts.dim)
    if avail and avail < need_mem:
        return (f"not enough free memory: {resources.gib(avail)} available, about "
                f"{resources.gib(need_mem)} needed to build the files with encode_layer")
    return None


def _run_size(opts: Options, workdir: Path, rows: int, queries: np.ndarray,
              query_texts: list[str]) -> SizeResult:
    log(f"{rows:,} chunks: generating vectors, texts and chunks")
    t = time.perf_counter()
    vectors = synthetic.unit_vectors(rows, opts.dim, opts.seed + rows)
    chunks = synthetic.chunks(synthetic.texts(rows, opts.seed + rows))
    result = SizeResult(rows, time.perf_counter() - t)
    for etype in ELEMENT_TYPES:
        log(f"{rows:,} chunks: encode_layer {etype}")
        path = workdir / f"size-{rows}" / f"{etype}.db"
        result.built[etype] = b = layerfiles.build(path, chunks, vectors, etype)
        log(f"  {b.nbytes / 1e6:,.1f} MB, encode {b.encode_s:.2f}s, write {b.write_s:.2f}s")
        gc.collect()
    del vectors, chunks
    gc.collect()
    n = opts.queries_for(rows)
    for etype in ELEMENT_TYPES:
        path = result.built[etype].path
        log(f"{rows:,} chunks {etype}: open x{opts.open_repeats}")
        result.opens[etype] = opening.measure(path, opts.open_repeats)
        log(f"{rows:,} chunks {etype}: vector search x{n} (engine and kernel alternating)")
        v = result.vector[etype] = vector_search.measure(path, queries, n, opts.warmup)
        log(f"  engine p50 {v.engine.p50 * 1e3:.2f} ms, kernel p50 {v.kernel.p50 * 1e3:.2f} ms")
        if rows <= HYBRID_MAX_ROWS:
            log(f"{rows:,} chunks {etype}: hybrid search x{n}")
            h = hybrid_search.measure(path, queries, query_texts, n, opts.warmup)
            result.hybrid[etype] = h
            log(f"  first {h.first_query_s * 1e3:.0f} ms, p50 {h.engine.p50 * 1e3:.2f} ms")
        log(f"{rows:,} chunks {etype}: resident memory in a fresh process")
        result.memory[etype] = memory.probe(path)
    if not opts.keep:
        shutil.rmtree(workdir / f"size-{rows}", ignore_errors=True)
    return result


def run(opts: Options) -> Results:
    t0 = time.perf_counter()
    parent = opts.workdir
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="sediment-bench-", dir=parent))
    res = Results(opts, machine.describe(opts.command), workdir)
    log(f"workdir {workdir}, free disk {resources.gib(resources.disk_free(workdir))}")
    try:
        log("memory bandwidth: 1 GiB np.copyto, best of 5")
        res.bandwidth = bandwidth.measure()
        log(f"  {res.bandwidth.copy_gbps:.2f} GB/s (read + write)")
        gc.collect()
        max_q = max(opts.queries_for(r) for r in opts.sizes) + opts.warmup
        queries = synthetic.unit_vectors(max(max_q, 16), opts.dim, opts.seed + 1)
        query_texts = synthetic.query_texts(max_q, opts.seed + 2)
        for rows in opts.sizes:
            problem = _check_resources(opts, workdir, rows)
            if problem:
                log(f"SKIPPING {rows:,} chunks: {problem}")
                res.skipped.append((rows, problem))
                continue
            res.sizes.append(_run_size(opts, workdir, rows, queries, query_texts))
            gc.collect()
        total = opts.layer_split_total
        log(f"layers: {total:,} chunks over 1, 2 and 4 layers")
        vectors = synthetic.unit_vectors(total, opts.dim, opts.seed + 3)
        contents = synthetic.texts(total, opts.seed + 3)
        for etype in ELEMENT_TYPES:
            res.splits += multilayer.measure(workdir, vectors, contents, queries, etype,
                                             opts.queries_for(total), opts.warmup)
        del vectors, contents
        log("append latency")
        res.appends = append_bench.measure(workdir, opts.dim, opts.seed + 4,
                                           opts.append_repeats)
        log(f"compile: hash embedder, {opts.hash_corpus_files} files")
        res.compiles.append(compile_bench.compile_corpus(
            workdir, "hash", compile_bench.hash_embedder(), opts.hash_corpus_files))
        log("MiniLM: load and raw embedding throughput")
        embedder, load_s = compile_bench.warm_minilm()
        res.embed = compile_bench.embed_throughput(embedder, load_s, opts.embed_texts)
        log(f"  {res.embed.texts_per_s:.0f} texts/s")
        log(f"compile: MiniLM embedder, {opts.minilm_corpus_files} files")
        res.compiles.append(compile_bench.compile_corpus(
            workdir, "minilm", embedder, opts.minilm_corpus_files))
        for c in res.compiles:
            log(f"  {c.embedder}: {c.chunks} chunks in {c.seconds:.2f}s "
                f"({c.chunks_per_s:.0f} chunks/s)")
        for rows in opts.sizes:
            if rows in first_query.TARGETS:
                res.first_queries.append(first_query.measure(workdir, rows, opts.seed))
    finally:
        if not opts.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    res.machine.load_end = os.getloadavg()
    res.seconds = time.perf_counter() - t0
    return res

"""One Markdown section per benchmark family, rendered from the collected results."""

from __future__ import annotations

from bench import append_bench, first_query
from bench.fmt import count, gbps, mb, ms, rate, secs, table
from bench.runner import Results
from bench.timing import Stats


def bandwidth(res: Results) -> str:
    bw = res.bandwidth
    if bw is None:
        return "## 1. Memory bandwidth\n\nNot measured."
    gib = bw.nbytes / 2**30
    rows = [
        [f"`np.copyto` of {gib:g} GiB, read + write bytes", f"{2 * gib:g} GiB",
         ms(bw.copy_best_s), f"**{gbps(bw.copy_gbps)}**"],
        [f"`np.copyto` of {gib:g} GiB, read bytes only", f"{gib:g} GiB", ms(bw.copy_best_s),
         gbps(bw.copy_read_gbps)],
        ["float32 (rows, 384) matrix x vector (numpy BLAS), read only",
         f"{bw.gemv_bytes / 2**30:.2f} GiB", ms(bw.gemv_best_s), gbps(bw.gemv_gbps)],
    ]
    return "\n\n".join([
        "## 1. Memory bandwidth",
        table(["Measurement (best of 5)", "Bytes counted", "Time (ms)", "GB/s"], rows),
        f"The **limit** used below is the copy's read + write rate, {gbps(bw.limit_gbps)} GB/s "
        "(10^9 bytes/s). A scan's limit is its matrix bytes divided by this rate. An exact "
        "scan only reads; a streaming read runs at roughly the rate a copy moves bytes in "
        "both directions, and the read-only matrix-vector row is the check. Neither is a "
        "hard ceiling: the layer files are read through a memory map of the page cache, "
        "which the kernel may back with large folios (fewer TLB misses than the anonymous "
        "arrays here), so a scan can beat this figure (engine / limit below 1x).",
    ])


def files(res: Results) -> str:
    rows = []
    for s in res.sizes:
        for etype, b in s.built.items():
            o, mem = s.opens[etype], s.memory.get(etype)
            rows.append([
                count(s.rows), etype, mb(b.nbytes), mb(b.matrix_bytes), secs(s.generate_s),
                secs(b.encode_s),
                mb(b.encode_extra_rss) if b.encode_extra_rss is not None else "-",
                secs(b.write_s),
                f"{ms(o.layerfile.p50)} / {ms(o.layerfile.p99)}",
                f"{ms(o.layerset.p50)} / {ms(o.layerset.p99)}",
                ms(mem.open_s) if mem else "-",
            ])
    return "\n\n".join([
        "## 2. Layer files: writing and opening",
        table(["Chunks", "Type", "File (MB)", "Matrix (MB)", "Generate (s)",
               "encode_layer (s)", "encode_layer extra RSS (MB)", "Write (s)",
               "LayerFile.open p50 / p99 (ms)", "LayerSet open p50 / p99 (ms)",
               "Open, fresh process (ms)"], rows, ["r", "l", *["r"] * 9]),
        "Synthetic chunks: 384-dim random normal vectors, L2-normalised (float32, fixed seed), "
        "short texts of 6 to 14 words from a 400-word vocabulary with Zipf frequencies, no "
        "relationships. *Generate* is the random vectors, texts and `Chunk` objects (once per "
        "size, shared by f32 and i8). *encode_layer* is the product's writer building the "
        "whole file in memory (for i8 it includes quantisation with scale 1/127); its *extra "
        "RSS* is the benchmark process's peak resident memory during the call (peak reset "
        "through `/proc/self/clear_refs` just before) minus its RSS before it. *Write* "
        "writes those bytes to the page cache. *Open* is `LayerFile.open` plus "
        "`.embeddings.shape`, and `LayerSet({'base': path}).layers()` plus `.schema()`: "
        f"median and p99 of {res.options.open_repeats} opens in this process of a file "
        "already in the page cache (just written). The fresh-process figure is the first "
        "open in a new Python process (imports excluded), same page cache.",
    ])


def vector(res: Results) -> str:
    bw = res.bandwidth
    rows = []
    for s in res.sizes:
        for etype, v in s.vector.items():
            limit = v.bytes_scanned / (bw.limit_gbps * 1e9) if bw else float("nan")
            rows.append([
                count(s.rows), etype, str(v.engine.n), mb(v.bytes_scanned),
                ms(v.engine.p50), ms(v.engine.p99), ms(v.kernel.p50), ms(v.kernel.p99),
                ms(v.overhead), gbps(v.gbps(v.engine.p50)),
                gbps(v.gbps(v.kernel.p50)), ms(limit), f"{v.engine.p50 / limit:.2f}x",
                ms(v.first_query_s), "yes" if v.agree else "**no**",
            ])
    return "\n\n".join([
        "## 3. Exact vector search (k = 10)",
        table(["Chunks", "Type", "Queries", "Scanned/query (MB)", "Engine p50 (ms)",
               "Engine p99 (ms)", "Kernel p50 (ms)", "Kernel p99 (ms)",
               "Engine overhead p50 (ms)", "Engine GB/s", "Kernel GB/s", "Limit (ms)",
               "Engine / limit", "First query (ms)", "Same top 10"], rows,
              ["r", "l", *["r"] * 13]),
        "*Engine* is `sediment.search.search(layerset, SearchRequest(k=10, mode='vector'), q, "
        "normalised=True)` on one base layer: layer refresh (one `stat`), schema check, scan, "
        "top 50 candidates, precedence and hit decoding. *Kernel* is the scan alone: "
        "`sediment.search.vector.dot_scores` + `top_k(scores, 10)` on the mapped matrix. "
        "*Scanned* is rows x dims x element size; GB/s is that over the p50; *Limit* is "
        "scanned bytes over the measured bandwidth (section 1). *First query* is the first "
        "engine query on a freshly opened layer set (it also runs the one-time chunk-table "
        "checks), excluded from the percentiles, as are the warm-up queries. Query vectors "
        "are random unit vectors. *Same top 10*: the engine's ids equal the kernel's for 5 "
        "queries. Engine and kernel run alternately, query by query, and the overhead is the "
        "median of the per-query differences. f32 scans run on numpy's BLAS with the thread "
        "count in the machine table; i8 scans run on simsimd's int8 dot product (the best "
        "kernel family listed in the machine table; one thread below 262,144 rows, every "
        "core from there). The k best of a scan come from a threshold on the maxima of "
        "1,024 blocks above 65,536 rows (`top_k`). When another process "
        "keeps one of two cores busy, a two-thread BLAS call waits for it, which shows as "
        "millisecond-scale p50s on small f32 layers: compare with the load average.",
    ])


def hybrid(res: Results) -> str:
    rows = []
    for s in res.sizes:
        for etype, h in s.hybrid.items():
            rows.append([
                count(s.rows), etype, ms(h.first_query_s), f"{h.first_bm25_ms:,.1f}",
                ms(h.engine.p50), ms(h.engine.p99), f"{h.bm25_p50_ms:.2f}",
                f"{h.vector_p50_ms:.2f}",
            ])
    if not rows:
        return "## 4. Hybrid search\n\nNot measured (no size of 100k chunks or fewer)."
    return "\n\n".join([
        "## 4. Hybrid search (vector + BM25, k = 10)",
        table(["Chunks", "Type", "First hybrid query (ms)", "of which BM25 (ms)",
               "p50 (ms)", "p99 (ms)", "BM25 part p50 (ms)", "Vector part p50 (ms)"], rows,
              ["r", "l", *["r"] * 6]),
        "The BM25 index is built from the layer's strings by the first lexical query and kept "
        "for the life of the process: the *first hybrid query* (on a layer set that already "
        "ran one vector query) is that build plus one query, and *of which BM25* is the "
        "engine's own `timings_ms['bm25']` for it. The percentiles are over later queries of "
        "2 or 3 words from the same vocabulary; the BM25 and vector parts are the engine's "
        "own timings (the rest is fusion, precedence and decoding).",
    ])


def resident(res: Results) -> str:
    rows = []
    for s in res.sizes:
        for etype, p in s.memory.items():
            rows.append([
                count(s.rows), etype, mb(p.file_bytes), mb(p.imports.rss),
                f"{mb(p.opened.rss)} ({mb(p.opened.anon)} / {mb(p.opened.file)})",
                mb(p.opened.peak),
                f"{mb(p.searched.rss)} ({mb(p.searched.anon)} / {mb(p.searched.file)})",
                mb(p.searched.peak), ms(p.first_search_s),
            ])
    return "\n\n".join([
        "## 5. Resident memory of a fresh process",
        table(["Chunks", "Type", "File (MB)", "After imports (MB)",
               "After open: RSS (anon / file) (MB)", "Peak after open (maxrss, MB)",
               "After 1 search: RSS (anon / file) (MB)", "Peak after search (maxrss, MB)",
               "First search (ms)"], rows, ["r", "l", *["r"] * 7]),
        "A new process (`python -m bench.rss_probe FILE`, which does the work in a child "
        "forked from its small interpreter so that `ru_maxrss` does not inherit the big "
        "benchmark parent's peak at exec) imports Sediment, opens the layer and reads its "
        "header facts (chunk count, dims, type, `.embeddings.shape`), then runs one engine "
        "vector search. RSS is `VmRSS` from `/proc/self/status`, split into anonymous memory "
        "(the process's own) and mapped file pages (the page cache, shared with every other "
        "reader and reclaimable); peak is `getrusage(RUSAGE_SELF).ru_maxrss` at that point. "
        "Opening maps the file without reading it, so RSS stays at the import level; a "
        "search touches the whole matrix, which then counts as mapped file pages, not as "
        "private memory.",
    ])


def layers(res: Results) -> str:
    rows = []
    base: dict[str, float] = {}
    for sp in res.splits:
        base.setdefault(sp.element_type, sp.engine.p50)
        rows.append([
            str(sp.layers), sp.element_type, count(sp.total), ms(sp.engine.p50),
            ms(sp.engine.p99), ms(sp.kernel.p50), ms(sp.overhead),
            f"{sp.engine.p50 / base[sp.element_type]:.2f}x",
        ])
    if not rows:
        return "## 6. Layers\n\nNot measured."
    total = count(res.splits[0].total)
    return "\n\n".join([
        f"## 6. The same {total} chunks over 1, 2 and 4 layers",
        table(["Layers", "Type", "Chunks", "Engine p50 (ms)", "Engine p99 (ms)",
               "Kernel sum p50 (ms)", "Engine overhead p50 (ms)", "vs 1 layer"], rows,
              ["r", "l", *["r"] * 6]),
        "The chunks are split evenly over base; base + local; base + delta + user + local "
        "(distinct ids, so nothing is overridden). *Kernel sum* scans every layer's matrix "
        "and keeps its top 50 (what the engine keeps per layer for k = 10), without the "
        "engine, alternating with the engine query by query. The overhead column is the median "
        "of the per-query differences: what the engine adds on top of the scans.",
    ])


def compile_and_embed(res: Results) -> str:
    rows = [[c.embedder, str(c.files), f"{c.chunks:,}", f"{c.source_bytes / 1e3:,.0f}",
             f"{c.chars_per_chunk:,.0f}", secs(c.seconds), rate(c.chunks_per_s),
             secs(c.read_s), secs(c.embed_s), secs(c.write_s)] for c in res.compiles]
    parts = ["## 7. Compile and embedding throughput"]
    if rows:
        parts += [
            table(["Embedder", "Files", "Chunks", "Source (KB)", "Chars/chunk", "Total (s)",
                   "Chunks/s", "Read + chunk (s)", "Embed (s)", "Encode + write (s)"], rows,
                  ["l", *["r"] * 9]),
            "`compile_layer` over a generated Markdown corpus (a `#` title with an intro, "
            "then nine `##` sections of 3 to 5 sentences of English words, so about ten "
            "chunks per file), f32 output, no embedding cache (every chunk is embedded). "
            "The phases come from the compile's progress callbacks: *Embed* runs from the "
            "last file read to the last embedding batch (it includes the one `git log` "
            "lookup of source times); *Encode + write* is the rest (encode_layer, sha256, "
            "fsync and rename). The MiniLM embedder was already loaded (its load time is "
            "below).",
        ]
    e = res.embed
    if e is not None:
        parts += [
            table(["MiniLM raw embedding", "Value"], [
                ["Texts per call", f"{e.texts} x {e.words} words"],
                ["Model load (first embed call)", f"{ms(e.load_s)} ms"],
                ["One embed call p50", f"{ms(e.batch.p50)} ms"],
                ["Throughput", f"**{rate(e.texts_per_s)} texts/s**"],
            ], ["l", "r"]),
            "`make_embedder('minilm', cache_path=None).embed(texts)` on short texts like a "
            "one-line agent note (the embedder sorts by length and runs batches of up to 64 "
            "texts and 2,048 padded tokens on all available cores), "
            f"median of {e.batch.n} calls after one warm-up call.",
        ]
    return "\n\n".join(parts)


def append(res: Results) -> str:
    plain = [a for a in res.appends if a.variant == "append"]
    if not plain:
        return "## 8. Append latency\n\nNot measured."
    before = {(a.existing, a.element_type): a for a in res.appends if a.variant == "in memory"}
    rows = []
    for a in plain:
        old = before.get((a.existing, a.element_type)) if a.batch == 1 else None
        rows.append([f"{a.existing:,}", str(a.batch), a.element_type, ms(a.stats.p50),
                     ms(a.stats.p99), rate(a.chunks_per_s),
                     f"{ms(old.stats.p50)} / {ms(old.stats.p99)}" if old else "",
                     f"{a.stats.p50 / old.stats.p50:.2f}x" if old else ""])
    embeds = {(a.existing, a.element_type): a.stats for a in res.appends
              if a.variant == "embed"}
    saves = []
    for a in res.appends:
        if a.variant == "save":
            e = embeds.get((a.existing, a.element_type))
            saves.append([f"{a.existing:,}", a.element_type, ms(a.stats.p50), ms(a.stats.p99),
                          f"{ms(e.p50)} / {ms(e.p99)}" if e else ""])
    n = plain[0].stats.n
    split: dict[tuple[int, str], dict[str, Stats]] = {}
    for a in res.appends:
        if a.variant in append_bench.PHASES:
            split.setdefault((a.existing, a.element_type), {})[a.variant] = a.stats
    phase_rows = [[f"{existing:,}", etype,
                   *(f"{ms(got[p].p50)} / {ms(got[p].p99)}" for p in append_bench.PHASES)]
                  for (existing, etype), got in split.items()]
    parts = [
        "## 8. Append latency",
        table(["Chunks already in the layer", "Appended", "Type", "p50 (ms)", "p99 (ms)",
               "Chunks/s", "Previous write p50 / p99 (ms)", "p50 now / before"], rows,
              ["r", "r", "l", "r", "r", "r", "r", "r"]),
        "`LayerSet.append(LayerName.LOCAL, chunks, vectors, profile=...)` on a layer set "
        f"holding only the local layer: median and p99 of {n} appends, each to a fresh copy "
        "of the same starting file (copy, fsync and re-open untimed). An append is a "
        "commit: it takes the file locks, re-reads the layer, writes a new file beside it "
        "(the old "
        "sections copied as bytes from the old file's mapping, the new chunks encoded), "
        "fsyncs it, renames it over the old one and fsyncs the directory, so its cost grows "
        "with the layer's size. *Previous write* is the same `LayerSet.append` with the "
        "file written the way it was before (`encode_append` assembling the whole new file "
        "in memory, then one write), timed alternately with the append.",
    ]
    if phase_rows:
        parts += [
            table(["Chunks already in the layer", "Type",
                   *(f"{p} p50 / p99 (ms)" for p in append_bench.PHASES)], phase_rows,
                  ["r", "l", "r", "r", "r", "r"]),
            "*Where a one-chunk append's time goes*: the same appends, each part timed where "
            "the store calls it: *write* is `format.writer.write_append` streaming the new "
            "file into the page cache, *fsync file* and *fsync directory* the two fsyncs of "
            "`store.atomic.atomic_fill`, *rest* everything else (locks, re-reading the layer, "
            "ids, metadata, the rename, re-opening the new file).",
        ]
    stores = {(a.existing, a.element_type, a.variant): a.stats for a in res.appends
              if a.variant.startswith("store")}
    store_rows = [[f"{existing:,}", etype, f"{ms(st.p50)} / {ms(st.p99)}",
                   f"{ms(old.p50)} / {ms(old.p99)}", f"{st.p50 / old.p50:.2f}x"]
                  for (existing, etype, variant), st in stores.items() if variant == "store"
                  for old in [stores[(existing, etype, "store, row per event")]]]
    if store_rows:
        parts += [
            table(["Items (and events) in the layer", "Type", "Shared zero row p50 / p99 (ms)",
                   "Row per event p50 / p99 (ms)", "p50 shared / per event"], store_rows,
                  ["r", "l", "r", "r", "r"]),
            "*An agent store's write*: one item and its `meta.*` event in one append, into a "
            "layer holding that many items, each with its event. Events have no vector; they "
            "now share one zero row of the file instead of a row each (the file is about half "
            "the size in f32), timed alternately with the previous layout and write.",
        ]
    if saves:
        parts += [
            table(["Chunks already in the layer", "Type", "Save p50 (ms)", "Save p99 (ms)",
                   "Of which embedding p50 / p99 (ms)"], saves, ["r", "l", "r", "r", "r"]),
            "*Save*: what an agent memory or progressive-context store pays per write: one new "
            "text embedded by the loaded MiniLM model (no cache), then appended as above. "
            "The targets are p99 under 100 ms at 10,000 memories and at 5,000 context "
            "items (docs/architecture.md, \"Appends\").",
        ]
    return "\n\n".join(parts)


def embed_memory(res: Results) -> str:
    e, c = res.embed_runs, res.compile_memory
    title = "## 9. Embedding memory: Sediment's embedder beside a bare onnxruntime loop"
    if e is None:
        return title + "\n\nNot measured."
    rows = []
    for variant, label in (("sediment", "Sediment `MiniLMEmbedder`"),
                           ("bare", "bare onnxruntime loop")):
        wall, cpu = e.median(variant, "wall_s"), e.median(variant, "cpu_s")
        peak, loaded = e.median(variant, "peak_rss"), e.median(variant, "loaded_rss")
        rows.append([label, rate(e.texts / wall), f"{cpu / e.texts * 1e3:.1f}",
                     f"{peak / 1e6:,.0f}", f"{(peak - loaded) / 1e6:,.0f}"])
    ratio = (e.median("bare", "cpu_s") / e.median("sediment", "cpu_s"))
    wall_ratio = e.median("bare", "wall_s") / e.median("sediment", "wall_s")
    parts = [
        title,
        table(["Embedder", "Texts/s", "CPU ms per text", "Peak RSS (MB)",
               "Peak above the loaded model (MB)"], rows, ["l", "r", "r", "r", "r"]),
        f"{e.texts} texts of 1,000 characters (about 200 tokens each) embedded in one call, "
        f"in a fresh process per run, the two alternating over {len(e.runs['sediment'])} "
        "rounds; medians. The bare loop is a default `onnxruntime.InferenceSession` over the "
        "same model file and tokenizer, 64 texts at a time in their order, padded to the "
        "longest of each batch, mean-pooled and normalised. Sediment sorts by length and "
        "cuts batches at 2,048 padded tokens, with the arena growing by what is asked "
        f"(`src/sediment/embed/minilm.py`). Throughput, Sediment against bare: "
        f"**{wall_ratio:.2f}x** by wall time, **{ratio:.2f}x** by CPU time (above 1: "
        f"Sediment is faster). Largest difference between their vectors: {e.max_diff:.1e}.",
    ]
    if c is not None:
        bound = (1 << 30) + c.layer_bytes
        word = "within" if c.peak_rss <= bound else "OVER"
        parts += [table(["Compile (MiniLM, fresh process)", "Value"], [
            ["Files / chunks", f"{c.files} / {c.chunks:,}"],
            ["Layer written (MB)", f"{c.layer_bytes / 1e6:,.1f}"],
            ["Peak RSS (MB)", f"**{c.peak_rss / 1e6:,.0f}**"],
            ["Peak RSS after loading the model (MB)", f"{c.loaded_rss / 1e6:,.0f}"],
            ["Target: 1 GiB + the layer (MB)", f"{bound / 1e6:,.0f} ({word})"],
            ["CPU seconds", secs(c.cpu_s)],
        ], ["l", "r"]),
            "`compile_layer` over the generated Markdown corpus of section 7, in a fresh "
            "process (`python -m bench.embed_probe compile`); peak RSS is its `VmHWM`."]
    return "\n\n".join(parts)


def fresh_process(res: Results) -> str:
    if not res.first_queries:
        return "## 10. First query of a fresh process\n\nNot measured (no size of 100k or 1M)."
    return first_query.section(res.first_queries, res.options.command)


def all_sections(res: Results) -> list[str]:
    return [bandwidth(res), files(res), vector(res), hybrid(res), resident(res), layers(res),
            compile_and_embed(res), append(res), embed_memory(res), fresh_process(res)]


SECTION_OF = {"search": ("## 1.", "## 2.", "## 3.", "## 4.", "## 5."), "layers": ("## 6.",),
              "compile": ("## 7.",), "append": ("## 8.",), "embed-memory": ("## 9.",),
              "first-query": ("## 10.",)}
"""The report sections each ``--only`` choice rewrites, by heading prefix."""


def method(res: Results) -> str:
    o = res.options
    sizes = ", ".join(count(s) for s in o.sizes)
    return "\n".join([
        "## Method",
        "",
        f"- Sizes: {sizes} chunks x {o.dim} dims, f32 and i8; seed {o.seed}. Vector queries "
        f"per configuration: {o.queries_for(10_000)} (100 at 1M in a full run), after "
        f"{o.warmup} warm-up queries.",
        "- Timing is `time.perf_counter` around each call; p50 is the median, p99 the 99th "
        "percentile (numpy's linear interpolation); `gc.collect()` runs before each timed "
        "series.",
        "- Layer files are written with the product's `encode_layer` into a temporary "
        "directory (or `--workdir`) and deleted afterwards unless `--keep`; they are never "
        "committed (1M x 384 f32 is 1.5 GB).",
        "- Every file is measured while it is in the page cache (it was just written): these "
        "are warm numbers. A cold read from disk is bounded by the disk, not by Sediment.",
        "- Options: `--quick` (10k and 100k, fewer queries), `--sizes 10000,100000,1000000`, "
        "`--out docs/benchmarks.md`, `--workdir DIR`, `--keep`, `--dim`, `--seed`.",
    ])

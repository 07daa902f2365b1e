"""The first hybrid query of a fresh process, with and without the persisted lexicon.

``python -m bench.first_query [--sizes 100000,1000000] [--workdir DIR]`` prints this section
alone (Markdown); ``python -m bench`` includes it. Per size: a base layer of chunk-sized
texts (20 to 80 Zipf-distributed words from 5,000 pseudo-words, so terms have realistic
document frequencies) with random unit vectors recorded under the MiniLM profile, its
approximate index and its lexicon as ``compile`` writes them; then fresh processes
(``bench.first_query_probe``) that load MiniLM and answer a hybrid search through
``ops.run_search``, and the real ``sediment search`` command end to end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import synthetic
from bench.fmt import count, mb, ms, table
from bench.progress import log
from sediment.embed import profile_for
from sediment.format import Chunk, encode_layer
from sediment.search.ann import ensure_index
from sediment.search.lexicon import ensure_lexicon, lexicon_files

EXACT = "lexicon file, exact vector scan"
TARGETS = {100_000: 0.1, 1_000_000: 1.0}
"""Budget of the first hybrid query after the model is loaded, by layer size (issue 13)."""
RUNS = 3
VOCABULARY = 5000
QUERY_RANKS = (40, 300, 1500)
"""Frequency ranks of the query's three words (common, mid, rare)."""


@dataclass(frozen=True, slots=True)
class FirstQuery:
    rows: int
    text_mb: float
    build_lexicon_s: float
    build_index_s: float
    lexicon_bytes: int
    probe: dict[str, dict[str, float]]
    """Variant ("lexicon file", "rebuilt in memory") -> median of each probe timing."""
    bm25_ms: dict[str, float]
    cli_s: float
    cli_first_s: float
    """``sediment search`` right after the lexicon was deleted (it rebuilds and writes it)."""
    runs: int = RUNS


def texts(n: int, seed: int) -> list[str]:
    vocab = np.asarray(synthetic.vocabulary(VOCABULARY), dtype=object)
    p = 1.0 / np.arange(1, VOCABULARY + 1)
    p /= p.sum()
    rng = np.random.default_rng(seed)
    out: list[str] = []
    for start in range(0, n, 50_000):
        m = min(50_000, n - start)
        lengths = rng.integers(20, 81, size=m)
        words = vocab[rng.choice(VOCABULARY, size=int(lengths.sum()), p=p)].tolist()
        at = 0
        for k in lengths.tolist():
            out.append(" ".join(words[at:at + k]))
            at += k
    return out


def build(directory: Path, rows: int, seed: int, dim: int = 384,
          index: bool = True) -> tuple[float, float, float]:
    """Write AGENTS.db with its approximate index and lexicon; (text MB, lexicon s, index s)."""
    contents = texts(rows, seed)
    text_mb = sum(len(t) for t in contents) / 1e6
    vectors = synthetic.unit_vectors(rows, dim, seed)
    chunks = [Chunk(i + 1, "note", t, "human", 1.0, 0) for i, t in enumerate(contents)]
    profile = profile_for("minilm").to_dict()
    data = encode_layer(chunks, vectors, dim=dim, metadata={
        "v": 1, "embedding_profile": profile, "id_high_water": rows, "tool_name": "bench"})
    del chunks, vectors, contents
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "AGENTS.db"
    path.write_bytes(data)
    del data
    t = time.perf_counter()
    ensure_lexicon(path)
    lexicon_s = time.perf_counter() - t
    t = time.perf_counter()
    if index:
        ensure_index(path)
    index_s = time.perf_counter() - t if index else float("nan")
    return text_mb, lexicon_s, index_s


def query() -> str:
    vocab = synthetic.vocabulary(VOCABULARY)
    return " ".join(vocab[i] for i in QUERY_RANKS)


def probe(directory: Path, *flags: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "bench.first_query_probe", str(directory),
                          query(), *flags], capture_output=True, text=True, check=True,
                         timeout=600)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def cli(directory: Path) -> float:
    exe = Path(sys.executable).parent / "sediment"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    t = time.perf_counter()
    subprocess.run([str(exe), "search", "--dir", str(directory), "-k", "10", query()],
                   check=True, capture_output=True, timeout=600, env=env)
    return time.perf_counter() - t


def measure(workdir: Path, rows: int, seed: int = 20240601, *, runs: int = RUNS,
            index: bool = True) -> FirstQuery:
    directory = workdir / f"first-query-{rows}"
    log(f"first query: building {rows:,} chunks with {'index and ' if index else ''}lexicon")
    text_mb, lexicon_s, index_s = build(directory, rows, seed, index=index)
    [lex] = lexicon_files(directory / "AGENTS.db")
    lexicon_bytes = lex.path.stat().st_size
    variants: dict[str, tuple[str, ...]] = {"lexicon file": (),
                                            "rebuilt in memory": ("--no-lexicon-file",)}
    if index:
        variants[EXACT] = ("--exact",)
    samples: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for _ in range(runs):  # alternate the variants so load changes hit all alike
        for v, flags in variants.items():
            samples[v].append(probe(directory, *flags))
    medians = {v: {key: statistics.median(float(s[key]) for s in runs)
                   for key in ("imports_s", "model_s", "digest_s", "first_s", "second_s")}
               for v, runs in samples.items()}
    bm25 = {v: statistics.median(float(s["first_timings_ms"].get("bm25", 0.0))
                                 for s in runs) for v, runs in samples.items()}
    cli_s = statistics.median(cli(directory) for _ in range(runs))
    lex.path.unlink()
    cli_first_s = cli(directory)
    for v, m in medians.items():
        log(f"  {v}: first query {m['first_s'] * 1e3:.0f} ms after the model, "
            f"bm25 {bm25[v]:.0f} ms")
    log(f"  sediment search end to end {cli_s:.2f} s ({cli_first_s:.2f} s rebuilding the lexicon)")
    shutil.rmtree(directory, ignore_errors=True)
    return FirstQuery(rows, text_mb, lexicon_s, index_s, lexicon_bytes, medians, bm25, cli_s,
                      cli_first_s, runs)


def section(results: list[FirstQuery], command: str) -> str:
    rows = []
    for r in results:
        target = TARGETS.get(r.rows)
        for variant, m in r.probe.items():
            ok = "" if target is None or variant != "lexicon file" else (
                " (target {}: **{}**)".format(ms(target),
                                             "PASS" if m["first_s"] <= target else "FAIL"))
            rows.append([count(r.rows), variant, ms(m["model_s"]), ms(m["digest_s"]),
                         ms(m["first_s"]) + ok, f"{r.bm25_ms[variant]:,.1f}",
                         ms(m["second_s"]),
                         f"{r.cli_s:.2f}" if variant == "lexicon file" else
                         f"{r.cli_first_s:.2f}" if variant == "rebuilt in memory" else "-"])
    builds = [[count(r.rows), f"{r.text_mb:,.0f}", mb(r.lexicon_bytes),
               f"{r.build_lexicon_s:.1f}",
               "none (exact scans)" if r.build_index_s != r.build_index_s
               else f"{r.build_index_s:.1f}"] for r in results]
    return "\n\n".join([
        "## 10. First query of a fresh process (persisted lexicon)",
        f"Command: `{command}`",
        table(["Chunks", "BM25 postings", "Model load (ms)", "Model digest (ms)",
               "First hybrid query after the model (ms)", "of which BM25 (ms)",
               "Second query (ms)", "`sediment search` end to end (s)"], rows,
              ["r", "l", "r", "r", "r", "r", "r", "r"]),
        table(["Chunks", "Text (MB)", "Lexicon file (MB)", "Lexicon build (s)",
               "Approximate index build (s)"], builds, ["r", "r", "r", "r", "r"]),
        "Each row is the median over "
        f"{' / '.join(sorted({str(r.runs) for r in results}))} fresh process(es) per variant "
        "(`python -m bench.first_query_probe`, the variants alternating): imports, MiniLM "
        "loaded by one embed call and its "
        "*model digest* (the embedding profile hashes the model file, once per process, "
        "before a text query may be checked against the layers), then "
        "`ops.run_search(layerset, SearchRequest(text=..., k=10), embedder=...)` on a "
        "fresh `LayerSet`, hits decoded. The first query embeds the query and pays every "
        "per-process cost: mapping the layer, its vector side (an exact scan: a process "
        "opens a layer's approximate index only once its exact scans of the layer have "
        "cost about what opening it costs, so a first query never imports FAISS), "
        "and the BM25 postings: mapped from the `.lex` file beside the layer (key check "
        "included), or, as before lexicon files existed, built from the layer's strings "
        "(*rebuilt in memory*). Where the layer has an approximate index, a third variant "
        "asks for an exact scan explicitly (`exact=True`). *Of which BM25* "
        "is the engine's own `timings_ms['bm25']` of "
        "that query. `sediment search` end to end is the wall time of the real command "
        "(process start, imports, model load, query, table printed): the median of as "
        "many runs with the lexicon file present, and one run right after deleting it "
        "(that run rebuilds and rewrites it). Texts: 20 to 80 words drawn with Zipf "
        f"frequencies from {VOCABULARY:,} pseudo-words; vectors random unit rows recorded "
        "under the MiniLM profile; the query is three words of frequency ranks "
        f"{', '.join(str(r) for r in QUERY_RANKS)}.",
    ])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.first_query", description=__doc__)
    p.add_argument("--sizes", default="100000")
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--runs", type=int, default=RUNS, help="fresh processes per variant")
    p.add_argument("--no-index", action="store_true",
                   help="no approximate index: exact scans (a 1M index takes long to build)")
    a = p.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    workdir = Path(tempfile.mkdtemp(prefix="sediment-first-query-", dir=a.workdir))
    try:
        results = [measure(workdir, n, runs=a.runs, index=not a.no_index) for n in sizes]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    command = " ".join(["python -m bench.first_query", *(argv if argv is not None
                                                          else sys.argv[1:])])
    print(section(results, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())

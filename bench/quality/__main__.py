"""``python -m bench.quality [locomo|project|all] [options]``: recall@k and nDCG@10 tables.

Prints Markdown tables (overall and per category) and, with ``--json``, writes the numbers.
MiniLM embeddings are cached on disk (RFC 9.1 keys) in ``--cache``, so reruns embed nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from bench import pg_server
from bench.quality import locomo, project, report
from bench.quality.evaluate import MODES, ModeResult, run_questions
from sediment.embed import CachedEmbedder, Embedder, EmbeddingCache, HashEmbedder, MiniLMEmbedder
from sediment.pg import PgStore, parse_store_url
from sediment.search import ANALYZERS, FUSIONS, BM25Params, SearchRequest, make_fusion
from sediment.store import LayerSet

DEFAULT_CACHE = locomo.REPO / "build" / "quality" / "minilm-cache.sqlite"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__)
    p.add_argument("dataset", nargs="?", default="all", choices=("locomo", "project", "all"))
    p.add_argument("--fusion", default=None, choices=FUSIONS,
                   help="fusion strategy for hybrid (default: Sediment's default)")
    p.add_argument("--analyzer", default=None, choices=sorted(ANALYZERS),
                   help="BM25 analyzer (default: Sediment's default)")
    p.add_argument("--k1", type=float, default=None, help="BM25 k1 (default: Sediment's)")
    p.add_argument("--b", type=float, default=None, help="BM25 b (default: Sediment's)")
    p.add_argument("--memory-text", default="dated", choices=("dated", "speaker", "plain"),
                   help="how a LoCoMo turn is written as a memory")
    p.add_argument("--split-base", type=float, default=0.0, metavar="FRACTION",
                   help="write this fraction of each conversation's turns (the earliest) "
                        "as a base layer, the rest to the local layer (default 0: all local)")
    p.add_argument("--conversations", type=int, default=None,
                   help="only the first N LoCoMo conversations (quick runs)")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--embedder", default="minilm", choices=("minilm", "hash"))
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    p.add_argument("--backend", default="files", choices=("files", "pg", "both"),
                   help="LoCoMo over the layer files, a PostgreSQL store, or both side by "
                        "side (pg: --store URL, else a private pgserver)")
    p.add_argument("--store", default=None, help="PostgreSQL URL for --backend pg|both")
    return p.parse_args(argv)


def make_embedder(name: str, cache: Path) -> Embedder:
    inner: Embedder = MiniLMEmbedder() if name == "minilm" else HashEmbedder(384)
    return CachedEmbedder(inner, EmbeddingCache(cache))


def run_locomo(opts: argparse.Namespace, embedder: Embedder, base: SearchRequest,
               backend: str = "files") -> dict[str, ModeResult]:
    results: dict[str, ModeResult] = {}
    modes = opts.modes.split(",")
    t = time.perf_counter()
    url = pg_server.store_url(opts.store) if backend == "pg" else None
    for conv in locomo.load(limit=opts.conversations):
        with tempfile.TemporaryDirectory(prefix="sediment-locomo-") as tmp:
            qs = [(q.text, q.category, q.evidence) for q in conv.questions]
            if url is None:
                labels = locomo.write_memories(conv, Path(tmp), embedder, opts.memory_text,
                                               opts.split_base)
                run_questions(LayerSet.from_directory(tmp), embedder, qs, labels, base,
                              results, modes)
            else:
                with PgStore(parse_store_url(url, f"locomo-{conv.sample_id}")) as store:
                    labels = locomo.write_memories_to(store, conv, embedder, opts.memory_text)
                    run_questions(store, embedder, qs, labels, base, results, modes)
        print(f"  {conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} questions "
              f"({time.perf_counter() - t:.0f} s)", file=sys.stderr)
    return results


def request_template(opts: argparse.Namespace) -> SearchRequest:
    """The SearchRequest every question starts from: defaults unless an option says else."""
    params = BM25Params()
    params = BM25Params(opts.analyzer or params.analyzer,
                        params.k1 if opts.k1 is None else opts.k1,
                        params.b if opts.b is None else opts.b)
    if opts.fusion:
        return SearchRequest(text="x", bm25=params, fusion=make_fusion(opts.fusion))
    return SearchRequest(text="x", bm25=params)


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    embedder = make_embedder(opts.embedder, opts.cache)
    base = request_template(opts)
    out: dict[str, object] = {"options": {k: str(v) for k, v in vars(opts).items()}}
    if opts.dataset in ("locomo", "all"):
        backends = ("files", "pg") if opts.backend == "both" else (opts.backend,)
        for backend in backends:
            res = run_locomo(opts, embedder, base, backend)
            title = "LoCoMo" if backend == "files" else "LoCoMo over PostgreSQL"
            print(report.tables(title, res))
            out["locomo" if backend == "files" else "locomo_pg"] = report.as_json(res)
    if opts.dataset in ("project", "all"):
        res = project.run(embedder, base, opts.modes.split(","))
        print(report.tables("Project docs (ours)", res))
        out["project"] = report.as_json(res)
    if opts.json:
        opts.json.parent.mkdir(parents=True, exist_ok=True)
        opts.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

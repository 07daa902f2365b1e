"""What an append costs a large layer's approximate index: ``python -m bench.ann_append``.

A local layer of ``--rows`` mixture vectors (the peers workload, ``bench/peers/data.py``)
gets its HNSW index, then ``--append`` more chunks through ``LayerSet.append``. Searches
right after the append still use the old index for the old rows and scan the new rows
exactly; ``ensure_index`` then extends the old index with the new rows. Prints one
Markdown table: index build and extension times, and p50 latency and recall@10 (against
the exact scan of the same layer) before the append, after it, and after the extension.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.peers.data import DIM, PER_CENTRE, mixture
from sediment.format import Chunk, encode_layer
from sediment.search import SearchRequest, ann, search
from sediment.store import LayerName, LayerSet, NewChunk

F32 = npt.NDArray[np.float32]
PROFILE = {"backend": "bench", "model": "mixture", "revision": "1", "dim": DIM,
           "output_norm": "l2"}


def measure(ls: LayerSet, queries: F32) -> tuple[float, float, bool]:
    """p50 ms, recall@10 against exact, and whether every search was approximate."""
    exact = SearchRequest(k=10, mode="vector", exact=True)
    approx = SearchRequest(k=10, mode="vector")
    found, samples, all_approx = 0, [], True
    search(ls, approx, queries[0], normalised=True)
    for q in queries:
        t = time.perf_counter()
        res = search(ls, approx, q, normalised=True)
        samples.append(time.perf_counter() - t)
        all_approx &= all(h.approximate for h in res.hits)
        want = {h.chunk.id for h in search(ls, exact, q, normalised=True).hits}
        found += len(want & {h.chunk.id for h in res.hits})
    return float(np.median(samples) * 1e3), found / (10 * len(queries)), all_approx


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ann_append", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--append", type=int, default=1_000)
    p.add_argument("--queries", type=int, default=200)
    a = p.parse_args(argv)
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((max(a.rows // PER_CENTRE, 1), DIM), dtype=np.float32)
    x = mixture(a.rows, centres, rng)
    extra = mixture(a.append, centres, rng)
    queries = mixture(a.queries, centres, np.random.default_rng(8))
    work = Path(tempfile.mkdtemp(prefix="sediment-ann-append-"))
    try:
        path = work / LayerName.LOCAL.file_name
        chunks = [Chunk(i + 1, "note", f"chunk {i}", "mcp", 1.0, 0) for i in range(a.rows)]
        path.write_bytes(encode_layer(chunks, x, metadata={
            "v": 1, "embedding_profile": PROFILE}))
        t = time.perf_counter()
        ann.ensure_index(path)
        build_s = time.perf_counter() - t
        ls = LayerSet({LayerName.LOCAL: path})
        before = measure(ls, queries)
        items = [NewChunk("note", f"new {i}", "mcp", 1.0) for i in range(a.append)]
        t = time.perf_counter()
        ls.append(LayerName.LOCAL, items, extra, profile=PROFILE)
        append_s = time.perf_counter() - t
        after = measure(LayerSet({LayerName.LOCAL: path}), queries)
        t = time.perf_counter()
        ann.ensure_index(path)
        extend_s = time.perf_counter() - t
        extended = measure(LayerSet({LayerName.LOCAL: path}), queries)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{a.rows:,} rows + {a.append:,} appended, {a.queries} queries, top-10, "
          f"default search breadth\n")
    print("| state | index work | search p50 ms | recall@10 vs exact | approximate |")
    print("|---|---:|---:|---:|---|")
    for name, work_s, (p50, recall, approx) in (
            ("index built", f"build {build_s:.1f} s", before),
            (f"after appending {a.append:,} (append {append_s:.2f} s)", "none", after),
            ("index extended", f"extend {extend_s:.1f} s", extended)):
        print(f"| {name} | {work_s} | {p50:.2f} | {recall:.3f} | {approx} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m bench.web_review``: what the web page's layers page (each layer's counts and
``diff_layers`` of the delta against base) costs over the layer files and over PostgreSQL.

One synthetic base (``bench.synthetic``) and a delta of near-duplicates of some of its
chunks are written as layer files, then pushed into a PostgreSQL project; the page's own
view functions (``sediment.server.web._views``) then run against both backends,
interleaved so load on the shared machine hits both alike. Over PostgreSQL the diff
streams base and user through ``LayerStore.chunks`` (the file store reads them as arrays).

    python -m bench.web_review --rows 20000 --delta 50 --runs 5 [--store URL]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench import pg_server, synthetic
from bench.timing import interleaved
from sediment.format import Chunk, encode_layer
from sediment.pg import PgStore, parse_store_url, push
from sediment.server.web import _views as views
from sediment.store import LayerName, LayerSet, LayerStore


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.web_review", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--delta", type=int, default=50)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--store", default=None, help="PostgreSQL URL (default: a private "
                                                  "pgserver in a temporary directory)")
    return p.parse_args(argv)


def _page(store: LayerStore) -> int:
    views.layers(store, None)
    report = views.diff(store)
    assert report is not None
    return len(report.conflicts)


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    vectors = synthetic.unit_vectors(opts.rows, opts.dim, seed=1)
    texts = synthetic.texts(opts.rows, seed=2)
    rng = np.random.default_rng(5)
    picked = rng.choice(opts.rows, opts.delta, replace=False)
    near = vectors[picked] + rng.normal(0, 0.01, (opts.delta, opts.dim)).astype(np.float32)
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    first = opts.rows + 1
    delta = [Chunk(first + i, "note", texts[int(j)] + " (revised)", "mcp", 0.7, 0, ())
             for i, j in enumerate(picked)]
    md = synthetic.layer_metadata(opts.dim, opts.rows + opts.delta)
    with tempfile.TemporaryDirectory(prefix="sediment-web-bench-") as tmp:
        (Path(tmp) / "AGENTS.db").write_bytes(encode_layer(
            synthetic.chunks(texts), vectors, metadata=md))
        (Path(tmp) / "AGENTS.delta.db").write_bytes(encode_layer(delta, near, metadata=md))
        files = LayerSet.from_directory(tmp)
        url = pg_server.store_url(opts.store)
        with PgStore(parse_store_url(url, f"web-{opts.rows}"), statement_timeout_ms=0) as pg:
            push(pg, files, replace_base=True)
            assert pg.present() == [LayerName.DELTA, LayerName.BASE]
            found = {_page(files), _page(pg)}
            assert found == {opts.delta}, found
            files_s, pg_s = interleaved([lambda i: _page(files), lambda i: _page(pg)],
                                        opts.runs, warmup=1)
    print(f"layers page (counts + diff of {opts.delta} delta chunks against a base of "
          f"{opts.rows:,} x {opts.dim} dims), {opts.runs} runs each, interleaved")
    print("| backend | p50 s | max s |")
    print("|---|---:|---:|")
    for name, s in (("layer files", files_s), ("PostgreSQL", pg_s)):
        print(f"| {name} | {s.p50:.3f} | {max(s.samples):.3f} |")
    print(f"PostgreSQL / files (p50): {pg_s.p50 / files_s.p50:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

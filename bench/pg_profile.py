"""``python -m bench.pg_profile``: what one PostgreSQL search sends, and where its time goes.

Runs ``--searches`` searches of one mode against a project that ``bench.pg_search
--workdir DIR`` loaded, timing every statement psycopg sends (``Cursor.execute``; in a
pipeline that is the time to queue it, and the wait shows up at the block's end), and
prints, for the last search, each statement with its median time over the searches after
the first ten, its row count and its text. ``--before REV`` profiles the search module of
that git revision instead (as ``bench.pg_search --before`` runs it).

    python -m bench.pg_profile --workdir build/bench/pg-100k --rows 100000 --mode vector
    python -m bench.pg_profile --workdir build/bench/pg-100k --rows 100000 --before 07166b3

The statements' plans: ``EXPLAIN (ANALYZE, BUFFERS)`` of a printed statement, e.g. in
``psql`` on the private server (``host=DIR/pgdata``, database ``sediment_bench``).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from bench import pg_server, synthetic
from bench.pg_search import WORKLOADS, Before, _search, corpus, module_at
from sediment.pg import PgStore, parse_store_url
from sediment.search import SearchRequest


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.pg_profile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", type=Path, required=True)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--workload", choices=WORKLOADS, default="unclustered")
    p.add_argument("--mode", choices=("vector", "hybrid", "lexical"), default="vector")
    p.add_argument("--exact", action="store_true")
    p.add_argument("--searches", type=int, default=40)
    p.add_argument("--before", metavar="REV", default=None)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    _, queries = corpus(opts.workload, opts.rows, opts.searches)
    texts = synthetic.query_texts(opts.searches, seed=4)
    url = pg_server.store_url(None, pgdata=opts.workdir / "pgdata")
    log: list[tuple[float, int, str]] = []
    execute = psycopg.Cursor.execute

    def timed(self: psycopg.Cursor[Any], query: Any, params: Any = None,
              **kw: Any) -> psycopg.Cursor[Any]:
        t = time.perf_counter()
        out = execute(self, query, params, **kw)
        text = query if isinstance(query, str) else query.as_string(self)
        log.append(((time.perf_counter() - t) * 1e3, self.rowcount, " ".join(text.split())))
        return out

    psycopg.Cursor.execute = timed  # type: ignore[method-assign, assignment]
    per: list[list[tuple[float, int, str]]] = []
    totals: list[float] = []
    with PgStore(parse_store_url(url, f"bench-{opts.workload}-{opts.rows}"),
                 statement_timeout_ms=0) as pg:
        store: Any = Before(pg, module_at(opts.before)) if opts.before else pg
        request = SearchRequest(k=10, mode=opts.mode, exact=opts.exact)
        for i in range(opts.searches):
            log.clear()
            t = time.perf_counter()
            _search(store, replace(request, text=texts[i]) if opts.mode != "vector"
                    else request, queries[i])
            totals.append((time.perf_counter() - t) * 1e3)
            per.append(list(log))
    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    skip = min(10, len(per) - 1)
    per, totals = per[skip:], totals[skip:]
    print(f"{opts.mode}{' exact' if opts.exact else ''}"
          f"{' at ' + opts.before if opts.before else ''}: median search "
          f"{np.median(totals):.1f} ms over {len(totals)}, {len(per[-1])} statements")
    for j, (_, rows, text) in enumerate(per[-1]):
        med = float(np.median([p[j][0] for p in per if len(p) > j]))
        print(f"{med:8.2f} ms {rows:6d} rows  {text[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

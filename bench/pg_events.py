"""``python -m bench.pg_events``: what a team server's event log costs a search.

A search over PostgreSQL learns which ids the events hide, and leaves events (``meta.*``)
and memories out of its BM25 statistics as the file engine does; both read what a
server's log of its writes holds, so their cost could grow with it. This measures it:
one database, several projects with the same base and a local layer holding the same
notes, each with a different number of ``meta.write`` events beside them (the event a
write through MCP or HTTP records, with its actor). The same queries then run
through ``sediment.ops.run_search`` against every project, interleaved query by query
(``bench.timing.interleaved``), lexical and hybrid, and lexical after appending one
``meta.write`` (the write and the search timed together), as a search after an agent's
write runs, and the check a read of a local note by id makes (``store.rules.Reader``, as
``agents_get`` and the chunk resources read), and the proposals' states the review queue,
``propose`` and a decision read (``queue``):

    python -m bench.pg_events --rows 20000 --events 0,10000,100000 --queries 200
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Literal

import numpy as np

from bench import pg_server, synthetic
from bench.machine import describe
from bench.timing import interleaved
from sediment.format import Chunk, encode_layer
from sediment.ops import run_search
from sediment.pg import PgStore, parse_store_url, push
from sediment.search import SearchRequest
from sediment.store import LayerName, LayerSet, NewChunk
from sediment.store.events import event_content
from sediment.store.ids import WRITTEN_START
from sediment.store.rules import Reader

DIM = 64
NOTES = 200
Mode = Literal["lexical", "hybrid", "write+lexical", "get", "queue"]
ACTORS = ("alice", "bob", "carol")


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.pg_events", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=20_000, help="base chunks per project")
    p.add_argument("--events", default="0,10000,100000",
                   help="comma-separated numbers of meta.write events, one project each")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--store", default=None, help="PostgreSQL URL (default: a private "
                                                  "pgserver)")
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args(argv)
    try:
        opts.events = [int(x) for x in opts.events.split(",") if x.strip()]
    except ValueError:
        p.error(f"--events: expected comma-separated integers, got {opts.events!r}")
    if not opts.events or min(opts.events) < 0:
        p.error("--events: give at least one number, none negative")
    return opts


def build(directory: Path, rows: int, events: int) -> LayerSet:
    """A base of ``rows`` synthetic chunks and a local layer of ``NOTES`` notes followed by
    ``events`` write events naming them (the notes and base are the same in every
    project; only the log differs)."""
    directory.mkdir(parents=True)
    texts = synthetic.texts(rows + NOTES, seed=2)
    vectors = synthetic.unit_vectors(rows + NOTES, DIM, seed=1)
    base = synthetic.chunks(texts[:rows])
    (directory / "AGENTS.db").write_bytes(encode_layer(
        base, vectors[:rows], metadata=synthetic.layer_metadata(DIM, rows)))
    first = WRITTEN_START
    notes = [Chunk(first + i, "note", texts[rows + i], "mcp", 0.8, synthetic.CREATED_AT_MS)
             for i in range(NOTES)]
    log = [Chunk(first + NOTES + i, "meta.write",
                 event_content(actor=ACTORS[i % len(ACTORS)], event="write", layer="local"),
                 "mcp", 1.0, synthetic.CREATED_AT_MS, (first + i % NOTES,))
           for i in range(events)]
    local = np.concatenate([vectors[rows:], np.zeros((events, DIM), np.float32)])
    (directory / "AGENTS.local.db").write_bytes(encode_layer(
        notes + log, local, metadata=synthetic.layer_metadata(DIM, first + NOTES + events)))
    return LayerSet.from_directory(directory)


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    opts = parse(argv)
    machine = describe("python -m bench.pg_events " +
                       " ".join(argv if argv is not None else sys.argv[1:]))
    url = pg_server.store_url(opts.store, database="sediment_bench_events")
    stores: dict[int, PgStore] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in opts.events:
            files = build(Path(tmp) / f"e{n}", opts.rows, n)
            t = time.perf_counter()
            store = PgStore(parse_store_url(url, f"events{n}"), statement_timeout_ms=0)
            push(store, files)
            stores[n] = store
            _log(f"project events{n}: pushed in {time.perf_counter() - t:.1f} s")
    texts = synthetic.query_texts(opts.queries + 3, seed=7)
    qvecs = synthetic.unit_vectors(opts.queries + 3, DIM, seed=9)
    rows: list[dict[str, object]] = []
    note = Chunk(WRITTEN_START, "note", "", "mcp", 0.8, synthetic.CREATED_AT_MS)

    def query(store: PgStore, mode: Mode, i: int) -> object:
        if mode == "get":  # what reading a local note by id checks (agents_get, resources)
            return Reader(store, "bob").may_read(LayerName.LOCAL, note)
        if mode == "queue":  # the proposals' states: the review queue, propose, accept
            return store.proposals()
        if mode == "write+lexical":  # what a search after an agent's write pays
            store.append(LayerName.LOCAL, [NewChunk(
                "meta.write", event_content(actor="alice", event="write", layer="local"),
                "mcp", 1.0, sources=())], np.zeros((1, DIM), np.float32),
                profile=synthetic.profile(DIM))
        return run_search(store, SearchRequest(text=texts[i], k=10,
                                               mode="hybrid" if mode == "hybrid" else
                                               "lexical"),
                          query_vec=qvecs[i] if mode == "hybrid" else None)

    modes: tuple[Mode, ...] = ("lexical", "hybrid", "write+lexical", "get", "queue")
    for mode in modes:
        stats = interleaved([partial(query, stores[n], mode) for n in opts.events],
                            opts.queries)
        first = stats[0].p50
        for n, s in zip(opts.events, stats, strict=True):
            rows.append({"mode": mode, "events": n, "p50_ms": s.p50 * 1e3,
                         "p99_ms": s.p99 * 1e3, "ratio_to_first": s.p50 / first})
    for store in stores.values():
        store.close()
    machine.load_end = os.getloadavg()
    print(f"{opts.rows} base chunks, {NOTES} local notes, {opts.queries} queries, k=10, "
          f"dim {DIM}, load average {machine.load_start[0]:.1f} -> {machine.load_end[0]:.1f}")
    print(f"{'mode':13} {'events':>8} {'p50 ms':>8} {'p99 ms':>8} {'p50 / first':>12}")
    for r in rows:
        print(f"{r['mode']:13} {r['events']:>8} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} "
              f"{r['ratio_to_first']:>12.2f}")
    if opts.json:
        opts.json.write_text(json.dumps({"machine": asdict(machine), "rows": rows}, indent=2,
                                        default=str))


if __name__ == "__main__":
    main()

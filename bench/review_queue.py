"""``python -m bench.review_queue``: the review page with a backlog, over the layer files
and over PostgreSQL.

Seeds a project with ``--pending`` proposals (default 1,000; a tenth of them near-duplicates
of a base chunk or overrides of one: the ``conflict`` filter's rows) by agents of seven
names over the last 30 days, above a synthetic base of ``--base`` chunks; pushes the same
layers into a PostgreSQL project; then drives the real page (``sediment.server.web.WebUI``,
in process over ASGI, rendering included, no network) on both, interleaved:

- **queue**: ``GET /ui/queue`` (the first page of 50 rows, facets of every pending one);
- **filtered**: ``GET /ui/queue?conflict=yes&author=...&q=...``;
- **proposal**: ``GET /ui/proposals/ID`` (a different one each time: Markdown, sources,
  word diffs, events);
- **decision**: a confirmed accept (``POST /ui/decide``), then the page it leads to (the
  next proposal), as a reviewer experiences one decision.

Decisions append, so every view after one sees a new store state: nothing recomputes the
whole delta per view (``sediment.server.web._review.Queue``).

    python -m bench.review_queue [--pending 1000] [--base 5000] [--runs 40] [--store URL]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
from starlette.testclient import TestClient

from bench import pg_server, synthetic
from bench.machine import describe
from bench.timing import Stats, interleaved
from sediment.config import Environment, places
from sediment.embed import HashEmbedder
from sediment.format import Chunk, encode_layer
from sediment.pg import PgStore, parse_store_url, push
from sediment.server.web import WebUI
from sediment.store import LayerName, LayerSet, LayerStore
from sediment.store.events import WRITE, event_content, proposal_event
from sediment.store.rules import write_event_data
from sediment.workspace import Workspace

TOKEN = "bench-review-token-0123456789abcdef"
HOST = "http://127.0.0.1:8000"
DAY_MS = 86_400_000
ACTORS = [f"agent-{n}" for n in ("ada", "bo", "cy", "di", "ed", "fay", "gus")]
KINDS = ["note", "decision", "invariant", "convention"]


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.review_queue", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pending", type=int, default=1000)
    p.add_argument("--base", type=int, default=5000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--runs", type=int, default=40)
    p.add_argument("--store", default=None, help="PostgreSQL URL (default: a private "
                                                  "pgserver in a temporary directory)")
    return p.parse_args(argv)


def seed(directory: Path, pending: int, rows: int, dim: int) -> None:
    """A base of ``rows`` chunks and a delta of ``pending`` proposed chunks with their
    write and proposal events, every tenth a near-duplicate or an override of base."""
    vectors = synthetic.unit_vectors(rows, dim, seed=1)
    texts = synthetic.texts(rows, seed=2)
    rng = np.random.default_rng(7)
    now = 1_790_000_000_000
    first = rows + 1
    chunks: list[Chunk] = []
    vecs: list[np.ndarray] = []
    news = synthetic.unit_vectors(pending, dim, seed=3)
    bodies = synthetic.texts(pending, seed=4, min_words=20, max_words=60)
    for i in range(pending):
        at = now - int(rng.integers(0, 30 * DAY_MS))
        kind = KINDS[i % len(KINDS)]
        text = f"# Finding {i}: {bodies[i][:40]}\n\n{bodies[i]}\n\n- see `docs/{i}.md`"
        cid, vec = first + i, news[i]
        if i % 10 == 0:
            j = int(rng.integers(0, rows))
            if i % 20 == 0:  # overrides base chunk j (same id)
                cid, text = j + 1, texts[j] + " (corrected: not any more)"
            else:  # a near-duplicate of base chunk j that says something else
                text = texts[j] + " except on Fridays"
            vec = vectors[j] + rng.normal(0, 0.01, dim).astype(np.float32)
            vec /= np.linalg.norm(vec)
        chunks.append(Chunk(cid, kind, text, "mcp", round(float(rng.random()), 2), at, ()))
        vecs.append(vec)
    next_id = first + pending
    events: list[Chunk] = []
    for i, c in enumerate(chunks):
        actor = ACTORS[i % len(ACTORS)]
        made = proposal_event(c.id, LayerName.DELTA, copied=False, actor=actor)
        for kind, content in ((WRITE, event_content(**write_event_data(actor, LayerName.DELTA))),
                              (made.kind, made.content)):
            events.append(Chunk(next_id, kind, content, "mcp", 1.0, c.created_at_ms + 1,
                                (c.id,)))
            next_id += 1
    md = synthetic.layer_metadata(dim, next_id)
    (directory / "AGENTS.db").write_bytes(encode_layer(
        synthetic.chunks(texts), vectors, metadata=md))
    zeros = np.zeros((len(events), dim), np.float32)
    (directory / "AGENTS.delta.db").write_bytes(encode_layer(
        chunks + events, np.vstack([np.vstack(vecs), zeros]).astype(np.float32), metadata=md))


class Reviewer:
    """One signed-in browser's worth of requests against one backend's page."""

    def __init__(self, store: LayerStore, root: Path) -> None:
        dim = store.schema().dim
        ui = WebUI(Workspace(store, HashEmbedder(dim), places(Environment.read())),
                   token=TOKEN, root=root, host="127.0.0.1")
        self.http = TestClient(ui, base_url=HOST, follow_redirects=False)
        # One event loop for the client's life: its worker threads (each holding a
        # PostgreSQL connection) are reused, as a server's are, not one set per request.
        self.http.__enter__()
        login = self.http.get("/ui/login").text
        nonce = re.search(r'name="csrf" value="([^"]+)"', login)
        assert nonce is not None
        r = self.http.post("/ui/login", data={"csrf": nonce.group(1), "token": TOKEN,
                                              "reviewer": "bench"}, headers={"Origin": HOST})
        assert r.status_code == 303, r.text
        page = self.http.get("/ui/queue").text
        self.csrf = re.findall(r'name="csrf" value="([^"]+)"', page)[-1]
        self.ids = [int(x) for x in re.findall(r'/ui/proposals/(\d+)', page)]
        self.all = self._all()
        self.author = ACTORS[0]

    def _all(self) -> list[int]:
        found: list[int] = []
        page = 1
        while True:
            text = self.http.get(f"/ui/queue?sort=oldest&page={page}").text
            ids = [int(x) for x in re.findall(r'id="p(\d+)"', text)]
            found += [i for i in ids if i not in found]
            if 'rel="next"' not in text:
                return found
            page += 1

    def get(self, path: str) -> None:
        r = self.http.get(path)
        assert r.status_code == 200, (path, r.status_code, r.text[:500])

    def queue(self, i: int) -> None:
        self.get("/ui/queue")

    def filtered(self, i: int) -> None:
        self.get(f"/ui/queue?conflict=yes&author={self.author}&q=the")

    def proposal(self, i: int) -> None:
        self.get(f"/ui/proposals/{self.all[(i * 37) % len(self.all)]}")

    def decision(self, i: int) -> None:
        pid = self.all.pop()  # the newest-proposed of those left, never one already decided
        r = self.http.post("/ui/decide", data={"csrf": self.csrf, "action": "accept",
                                               "confirm": "yes", "proposal": str(pid),
                                               "from": str(pid)},
                           headers={"Origin": HOST})
        assert r.status_code == 303, r.text[:500]
        self.get(r.headers["location"])


def _row(name: str, files: Stats, pg: Stats) -> str:
    def ms(s: Stats, q: float) -> str:
        return f"{float(np.percentile(s.samples, q)) * 1000:.0f}"

    return (f"| {name} | {ms(files, 50)} | {ms(files, 95)} | {ms(pg, 50)} | {ms(pg, 95)} |")


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    with tempfile.TemporaryDirectory(prefix="sediment-review-bench-") as tmp:
        os.environ["SEDIMENT_TOKENS_FILE"] = f"{tmp}/tokens.json"
        os.environ["SEDIMENT_DATA_DIR"] = f"{tmp}/data"
        root = Path(tmp) / "project"
        root.mkdir()
        seed(root, opts.pending, opts.base, opts.dim)
        files = LayerSet.from_directory(root)
        url = pg_server.store_url(opts.store)
        project = f"review-{opts.pending}"
        with PgStore(parse_store_url(url, project), statement_timeout_ms=0) as pg:
            push(pg, files, replace_base=True)
            on_files, on_pg = Reviewer(files, root), Reviewer(pg, root)
            names = ("queue", "filtered", "proposal", "decision")
            # All eight in one shuffled loop: every view after a decision sees a new state.
            got = interleaved([getattr(r, n) for n in names for r in (on_files, on_pg)],
                              opts.runs, warmup=2)
            rows = [_row(n, got[2 * k], got[2 * k + 1]) for k, n in enumerate(names)]
    m = describe("python -m bench.review_queue " + " ".join(argv or sys.argv[1:]))
    print(f"review page: {opts.pending:,} pending proposals ({opts.pending // 10} "
          f"near-duplicates or overrides) over a base of {opts.base:,} x {opts.dim} dims, "
          f"{opts.runs} runs of each, files and PostgreSQL interleaved")
    print(f"machine: {m.cpu}, {m.usable_cores} usable cores, "
          f"{m.ram_bytes / 2**30:.0f} GiB, {m.date}")
    print("| operation | files p50 ms | files p95 ms | PostgreSQL p50 ms | PostgreSQL p95 ms |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())

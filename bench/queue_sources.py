"""``python -m bench.queue_sources``: what the review queue costs when proposals cite one
large file many times (issue 26, item 2: three proposals citing a large file 64 times each
took the queue from 0.02 s to 29.8 s and +64 MB).

A delta of ``--proposals`` proposals, each citing ``--cites`` lines spread over a Markdown
file of ``--mb`` MB, is written as layer files; the page's own view function
(``sediment.server.web._views.queue``) then renders the queue ``--runs`` times with one
reader, as the server keeps it. Reported: the first render (cold), the later ones (warm),
and how much the process's peak resident memory grew during the first (ru_maxrss).

    python -m bench.queue_sources --mb 20 --proposals 3 --cites 64 --runs 5

Runs against an older tree too (``PYTHONPATH=old/src``), whose queue takes the root.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sediment.embed import HashEmbedder
from sediment.format import Chunk, encode_layer
from sediment.ops import WriteRequest, write_context
from sediment.ops.propose import propose
from sediment.server.web import _views as views
from sediment.store import LayerSet


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.queue_sources", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=float, default=20.0, help="size of the cited file")
    p.add_argument("--proposals", type=int, default=3)
    p.add_argument("--cites", type=int, default=64, help="path:line sources per proposal")
    p.add_argument("--runs", type=int, default=5)
    return p.parse_args(argv)


def _store(root: Path, opts: argparse.Namespace) -> int:
    emb = HashEmbedder(dim=64)
    base = [Chunk(1, "canonical", "The guide.", "human", 1.0, 0, ("docs/guide.md:1",))]
    (root / "AGENTS.db").write_bytes(encode_layer(
        base, emb.embed(["The guide."]), dim=64,
        metadata={"v": 1, "embedding_profile": emb.profile.to_dict(), "id_high_water": 1}))
    (root / "docs").mkdir()
    line = "A line of the large design document, long enough to be ordinary prose.\n"
    lines = max(1, int(opts.mb * 1e6 / len(line)))
    with (root / "docs" / "big.md").open("w") as fh:
        for i in range(0, lines, 10_000):
            fh.write(line * min(10_000, lines - i))
    ls = LayerSet.from_directory(root)
    step = max(1, lines // opts.cites)
    for p in range(opts.proposals):
        sources = [f"docs/big.md:{min(lines, 1 + i * step + p)}" for i in range(opts.cites)]
        cid = write_context(ls, emb, WriteRequest(
            content=f"Finding {p} from the design document.", kind="note", confidence=0.7,
            sources=sources, scope="delta"))  # type: ignore[arg-type]
        propose(ls, cid)
    return lines


def _reader(root: Path) -> Any:
    try:
        from sediment.ingest import selector
        from sediment.review import SourceLines
    except ImportError:  # an older tree: the queue reads sources under the root
        return root
    return SourceLines(root, selector(["**/*.md"]))


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        lines = _store(root, opts)
        ls = LayerSet.from_directory(root)
        reader = _reader(root)
        times = []
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for run in range(opts.runs):
            t = time.perf_counter()
            items, _ = views.queue(ls, reader, 1)
            times.append(time.perf_counter() - t)
            if run == 0:
                grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
            assert len(items) == opts.proposals
            shown = sum(1 for it in items for s in (it.report.sources if it.report else ())
                        if s.found)
        warm = sorted(times[1:]) or times
    print(f"{opts.proposals} proposals x {opts.cites} sources into a {opts.mb:g} MB file "
          f"({lines} lines): first render {times[0]:.3f} s, later renders median "
          f"{warm[len(warm) // 2]:.3f} s, peak memory +{grew / 1024:.1f} MB in the first, "
          f"{shown} of {opts.proposals * opts.cites} lines shown")
    return 0


if __name__ == "__main__":
    sys.exit(main())

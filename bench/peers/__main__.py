"""``python -m bench.peers [--sizes 100000,1000000] [--workloads ...] [--quick] [--systems ...]``.

For each workload and size (``bench/peers/data.py``): generate the shared data, then for
each system build its files in one subprocess and query them in another. Results
accumulate in ``<workdir>/results.json`` (a rerun of some systems replaces only their
rows); the Markdown table and the PNG plot are rewritten from it (``--out``, default
docs/peers.md and docs/peers.png).

Approximate (HNSW) builds take minutes per million vectors on two cores, so by default
they run only at sizes up to ``--approx-max`` (100,000); Chroma, whose inserts build its
HNSW graph, follows the same cap. ``--keep`` leaves each system's files in the work
directory and ``--reuse`` queries kept files instead of building again (the build figures
come from the kept build). ``--sweep`` queries every HNSW system again at each search
breadth of ``--efforts``, for the recall-against-latency curves and the equal-recall table.
``--rounds`` passes are made over the queries at every setting, and the fastest is reported.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.peers import data, report
from bench.peers.systems import EFFORTS, SYSTEMS

REPO = Path(__file__).resolve().parents[2]


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="100000,1000000")
    p.add_argument("--quick", action="store_true",
                   help="100,000 vectors only, 50 queries, 5 s per system")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--approx-max", type=int, default=100_000,
                   help="largest size at which approximate indexes are built")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--seconds", type=float, default=20.0,
                   help="stop querying a system after this long (at least 10 queries)")
    p.add_argument("--workdir", type=Path, default=REPO / "build" / "peers")
    p.add_argument("--out", type=Path, default=REPO / "docs" / "peers.md")
    p.add_argument("--rounds", type=int, default=3,
                   help="passes over the queries per setting, spread over the system's run; "
                        "each setting reports its fastest pass")
    p.add_argument("--timeout", type=float, default=1800.0, help="per subprocess, seconds")
    p.add_argument("--keep", action="store_true", help="keep each system's built files")
    p.add_argument("--reuse", action="store_true", help="query kept builds, do not rebuild")
    p.add_argument("--sweep", action="store_true",
                   help="also query approximate systems at every search breadth of --efforts "
                        "(HNSW ef; Sediment sweeps its own nprobe values)")
    p.add_argument("--efforts", default=",".join(map(str, EFFORTS)))
    p.add_argument("--workloads", default=",".join(data.WORKLOADS),
                   help="mixture, unclustered (synthetic, at each of --sizes) and minilm "
                        "(real MiniLM vectors of WordNet glosses, at the corpus's size)")
    p.add_argument("--minilm-vectors", type=Path, default=data.MINILM_CACHE,
                   help="the cached MiniLM vectors (made by python -m bench.peers.wordnet)")
    a = p.parse_args(argv)
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    if a.quick:
        a.sizes, a.queries, a.seconds, a.rounds = "100000", 50, 5.0, 1
    bad = set(a.workloads.split(",")) - set(data.WORKLOADS)
    if bad:
        p.error(f"unknown workloads {sorted(bad)}; choose from {', '.join(data.WORKLOADS)}")
    return a


def worker(args: list[str], timeout: float) -> dict[str, float] | str:
    cmd = [sys.executable, "-m", "bench.peers.worker", *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"failed: {tail[:200]}"
    out: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    results_path = a.workdir / "results.json"
    results: dict[str, dict[str, object]] = (
        json.loads(results_path.read_text()) if results_path.exists() else {})
    t0 = time.perf_counter()
    plan = [(w, int(n)) for w in a.workloads.split(",") if w != "minilm"
            for n in a.sizes.split(",")]
    plan += [("minilm", 0)] if "minilm" in a.workloads.split(",") else []
    for workload, n in plan:
        print(f"{workload} {n:,}: preparing data and exact answers", file=sys.stderr)
        d = data.prepare(a.workdir, n, max(a.queries, 50), workload, a.minilm_vectors)
        n = n or int(np.load(d / "vectors.npy", mmap_mode="r").shape[0])
        for name in a.systems.split(","):
            system = SYSTEMS[name]
            key = f"{n}/{name}" if workload == "mixture" else f"{workload}/{n}/{name}"
            if system.mode == "approximate" and n > a.approx_max:
                results[key] = {"size": n, "system": name, "mode": system.mode,
                                "workload": workload,
                                "skipped": f"approximate builds capped at {a.approx_max:,}"}
                continue
            sysdir = d / name
            kept = sysdir / "build.json"
            row: dict[str, object] = {"size": n, "system": name, "mode": system.mode,
                                      "workload": workload}
            built: dict[str, float] | str
            if a.reuse and kept.exists():
                built = json.loads(kept.read_text())
            else:
                shutil.rmtree(sysdir, ignore_errors=True)
                built = worker(["build", name, str(sysdir), str(d)], a.timeout)
            if isinstance(built, str):
                row["skipped"] = built
            else:
                row.update(built)
                own = ",".join(map(str, system.efforts)) if system.efforts else a.efforts
                efforts = own if a.sweep and system.sweeps else ""
                asked = worker(["query", name, str(sysdir), str(d), "--queries",
                                str(a.queries), "--seconds", str(a.seconds),
                                "--rounds", str(a.rounds),
                                "--efforts", efforts], a.timeout)
                if isinstance(asked, str):
                    row["skipped"] = asked
                else:
                    row.update(asked)
            if not (a.keep or a.reuse):
                shutil.rmtree(sysdir, ignore_errors=True)
            results[key] = row
            print(f"  {name}: {report.one_line(row)} ({time.perf_counter() - t0:.0f} s)",
                  file=sys.stderr)
            results_path.write_text(json.dumps(results, indent=1))
    report.write(results, a.out, command="python -m bench.peers " + " ".join(
        argv if argv is not None else sys.argv[1:]))
    print(f"wrote {a.out} in {(time.perf_counter() - t0) / 60:.1f} min", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

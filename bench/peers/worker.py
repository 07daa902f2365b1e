"""Run in a fresh process: ``python -m bench.peers.worker build|query SYSTEM DIR DATA``.

``build`` makes the system's files in DIR from DATA/vectors.npy (and records its figures in
DIR/build.json, so a kept build can be queried again); ``query`` opens them, runs the
queries of DATA/queries.npy (up to ``--queries``, stopping a pass after ``--seconds``) and
scores recall@10 against DATA/truth.npy, then, given ``--efforts``, does the same again at
each search breadth; ``--rounds`` times over, every setting once per round, reporting each
setting's fastest pass (see ``best``). Prints one JSON object, including this process's
peak RSS (``VmHWM``, read before the sweep; see ``peak_rss``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.peers.systems import F32, SYSTEMS, K, Searcher


def disk_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def peak_rss() -> int:
    """This process's peak RSS: ``VmHWM``, which starts afresh at exec. ``getrusage``'s
    maxrss does not on Linux (it keeps the parent's peak across fork + exec), so it is only
    the fallback where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build(system: str, d: Path, data: Path) -> dict[str, float]:
    x = np.load(data / "vectors.npy")
    rss_data = peak_rss()
    t = time.perf_counter()
    SYSTEMS[system].build(d, x)
    out = {"build_s": time.perf_counter() - t, "build_rss": peak_rss(),
           "data_rss": rss_data, "disk_bytes": disk_bytes(d)}
    (d / "build.json").write_text(json.dumps(out))
    return out


def query(system: str, d: Path, data: Path, n: int, seconds: float,
          efforts: list[int], rounds: int) -> dict[str, Any]:
    queries = np.load(data / "queries.npy")
    truth = np.load(data / "truth.npy")
    t = time.perf_counter()
    run = SYSTEMS[system].open(d, None)
    open_s = time.perf_counter() - t
    t = time.perf_counter()
    run(queries[0])
    first_s = time.perf_counter() - t
    default = [measure(run, queries, truth, n, seconds)]
    out: dict[str, Any] = {"open_s": open_s, "first_query_s": first_s,
                           "query_rss": peak_rss(), "rounds": rounds}
    sweep: dict[int, list[dict[str, float]]] = {e: [] for e in efforts}
    for r in range(rounds):
        if r:
            default.append(measure(run, queries, truth, n, seconds))
        for e in efforts:
            sweep[e].append(measure(SYSTEMS[system].open(d, e), queries, truth, n, seconds))
    out.update(best(default))
    if efforts:
        out["sweep"] = [{"effort": e, **best(sweep[e])} for e in efforts]
    return out


def best(passes: list[dict[str, float]]) -> dict[str, float]:
    """The pass with the lowest median. Passes of one setting are spread over the run
    (every setting once per round), so a slow spell of this shared machine, which lasts
    seconds to minutes, lands on one pass of a setting rather than all of them; every
    system is measured by the same rule."""
    return min(passes, key=lambda m: m["p50_ms"])


def measure(run: Searcher, queries: F32, truth: npt.NDArray[np.int64], n: int,
            seconds: float) -> dict[str, float]:
    """Latency and recall@10 of one pass of ``run`` over the queries, after three warm-up
    queries."""
    for q in queries[1:4]:
        run(q)
    samples: list[float] = []
    found = 0
    start = time.perf_counter()
    for i in range(min(n, len(queries))):
        q = queries[i]
        t = time.perf_counter()
        got = run(q)
        samples.append(time.perf_counter() - t)
        found += len(set(got[:K]) & set(truth[i].tolist()))
        if time.perf_counter() - start > seconds and len(samples) >= 10:
            break
    s = np.asarray(samples)
    return {"queries": len(s), "p50_ms": float(np.median(s) * 1e3),
            "p99_ms": float(np.percentile(s, 99) * 1e3), "qps": float(len(s) / s.sum()),
            "recall_at_10": found / (K * len(s))}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("action", choices=("build", "query"))
    p.add_argument("system", choices=sorted(SYSTEMS))
    p.add_argument("dir", type=Path)
    p.add_argument("data", type=Path)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--efforts", default="", help="comma-separated search breadths to sweep")
    p.add_argument("--rounds", type=int, default=3,
                   help="passes over the queries per setting; the fastest is reported")
    a = p.parse_args()
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    a.dir.mkdir(parents=True, exist_ok=True)
    efforts = [int(e) for e in a.efforts.split(",") if e]
    out = (build(a.system, a.dir, a.data) if a.action == "build"
           else query(a.system, a.dir, a.data, a.queries, a.seconds, efforts, a.rounds))
    out["pid"] = os.getpid()
    print(json.dumps(out))


if __name__ == "__main__":
    main()

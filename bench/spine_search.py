"""Search latency over a four-layer set holding memories, notes with their write events and
proposals: what the spine's rules (per-actor hidden ids, memories left out of the BM25
statistics, the shared ranking core) cost a search, before and after.

``python -m bench.spine_search --rows 20000 --queries 300 [--before REV]`` builds the
layers once (synthetic texts and unit vectors, written with the layer-file encoder, so
both trees read the same bytes), then times hybrid, lexical and vector searches (k=10) of
this tree and, with ``--before``, of ``git archive REV src`` in a child process, the two
alternating query by query (two long-lived children) so both see the same machine. Prints
p50/p99 per mode and tree, and the p50 of the engine's own ``fusion`` timing (the ranking
core: fusion, precedence, hits); with ``--before``, also the median of the per-query ratios
after / before.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np

from bench import synthetic
from sediment.format import Chunk, encode_layer

MODES = ("hybrid", "lexical", "vector")
LAYERS = {"AGENTS.db": 0.80, "AGENTS.user.db": 0.05, "AGENTS.delta.db": 0.05,
          "AGENTS.local.db": 0.10}


def build(directory: Path, rows: int, dim: int = 384) -> None:
    """Base chunks, then user, delta and local layers where a tenth of the chunks are
    memories of two actors and every local note has a ``meta.write`` event."""
    texts = synthetic.texts(rows, seed=11)
    vectors = synthetic.unit_vectors(rows, dim, seed=12)
    start, next_id = 0, 1
    for name, share in LAYERS.items():
        n = int(rows * share) if name != "AGENTS.local.db" else rows - start
        chunks: list[Chunk] = []
        vecs: list[np.ndarray] = []
        for i in range(start, start + n):
            cid = next_id if name == "AGENTS.db" else 2**31 + i
            next_id += 1
            kind = "canonical" if name == "AGENTS.db" else (
                f"memory.fact.{'alice' if i % 2 else 'bob'}" if i % 10 == 0 else "note")
            chunks.append(Chunk(cid, kind, texts[i], "mcp", 0.8, synthetic.CREATED_AT_MS))
            vecs.append(vectors[i])
            if name == "AGENTS.local.db" and kind == "note":
                actor = "alice" if i % 3 else "bob"
                chunks.append(Chunk(2**31 + rows + i, "meta.write", json.dumps(
                    {"actor": actor, "event": "write", "layer": "local"}), "mcp", 1.0,
                    synthetic.CREATED_AT_MS, (cid,)))
                vecs.append(np.zeros(dim, dtype=np.float32))
        start += n
        high = max(c.id for c in chunks)
        data = encode_layer(chunks, np.stack(vecs), dim=dim, element_type="f32",
                            metadata=synthetic.layer_metadata(dim, high))
        (directory / name).write_bytes(data)


CHILD = r"""
import json, sys, time
import numpy as np
from sediment.search import SearchRequest, search
from sediment.store import LayerSet
directory, queries, actor = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
ls = LayerSet.from_directory(directory)
rng = np.random.default_rng(5)
vecs = rng.standard_normal((len(queries), 384)).astype(np.float32)
vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
extra = {"actor": actor} if "actor" in SearchRequest.__dataclass_fields__ else {}
for mode in ("hybrid", "lexical", "vector"):
    for q, v in zip(queries[:5], vecs[:5]):  # warm: BM25 build, kind masks, hidden ids
        search(ls, SearchRequest(text=q, k=10, mode=mode, **extra), v, normalised=True)
print("ready", flush=True)
for line in sys.stdin:
    mode, i = line.split()
    t = time.perf_counter()
    r = search(ls, SearchRequest(text=queries[int(i)], k=10, mode=mode, **extra),
               vecs[int(i)], normalised=True)
    print(json.dumps([(time.perf_counter() - t) * 1e3, r.timings_ms.get("fusion", 0.0)]),
          flush=True)
"""


def _tree(rev: str, into: Path) -> Path:
    data = subprocess.run(["git", "archive", rev, "src"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def _start(src: Path, directory: Path, queries: list[str], actor: str
           ) -> subprocess.Popen[str]:
    """A child searching with the tree ``src``: one query per line in, its times out."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(directory), json.dumps(queries),
                              actor], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={"PYTHONPATH": f"{src}:{Path.cwd()}", "PATH": "/usr/bin:/bin"})
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


def _ask(child: subprocess.Popen[str], mode: str, i: int) -> list[float]:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(f"{mode} {i}\n")
    child.stdin.flush()
    got: list[float] = json.loads(child.stdout.readline())
    return got


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", default=None, help="a git revision to compare with")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        layers = work / "layers"
        layers.mkdir()
        t = time.perf_counter()
        build(layers, args.rows)
        print(f"built {args.rows} rows in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        queries = synthetic.query_texts(args.queries, seed=13)
        trees = {"after": Path("src").resolve()}
        if args.before:
            trees[f"before ({args.before})"] = _tree(args.before, work / "before")
        samples: dict[str, dict[str, list[list[float]]]] = {k: {m: [] for m in MODES}
                                                            for k in trees}
        children = {label: _start(src, layers, queries, "alice") for label, src in trees.items()}
        labels = list(trees)
        for r in range(args.rounds):
            for mode in MODES:
                for i in range(len(queries)):  # query by query, the trees' order alternating
                    for label in labels[::-1] if (r + i) % 2 else labels:
                        samples[label][mode].append(_ask(children[label], mode, i))
        for child in children.values():
            assert child.stdin is not None
            child.stdin.close()
            child.wait()
        print("| tree | mode | p50 (ms) | p99 (ms) | ranking p50 (ms) |")
        print("|---|---|---:|---:|---:|")
        for label in trees:
            for mode in MODES:
                x = np.asarray(samples[label][mode])
                print(f"| {label} | {mode} | {np.median(x[:, 0]):.2f} | "
                      f"{np.percentile(x[:, 0], 99):.2f} | {np.median(x[:, 1]):.3f} |")
        if len(labels) == 2:
            for mode in MODES:
                a, b = (np.asarray(samples[x][mode]) for x in labels)
                ratio = np.median(a / np.maximum(b, 1e-9), axis=0)
                print(f"| after / before | {mode} | {ratio[0]:.3f} | | {ratio[1]:.3f} |")


if __name__ == "__main__":
    main()

"""``python -m bench.memory_quantised``: do i8 memory vectors change a dedup decision?

Each pair of ``bench.memory_pairs`` goes through ``MemoryService.save`` twice, the first
text then the second, for a fresh actor, over a memory store writing f32 vectors and over
one writing i8 (the default for unit-vector embedders: the layer writer's quantiser at
scale 1/127, as the context store). It reports how many decisions (supersede or keep)
differ, how far the stored similarity moved, and the size of one actor's file at
``--memories`` memories under each type.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.memory_pairs import PAIRS
from bench.quality.__main__ import DEFAULT_CACHE, make_embedder
from sediment.embed import Embedder
from sediment.memory import FileMemoryStore, MemoryService
from sediment.memory.model import memory_kind
from sediment.memory.store import NewMemory, Place
from sediment.store import LayerSet

TYPES = ("f32", "i8")


def _store(root: Path, embedder: Embedder, etype: str) -> FileMemoryStore:
    (root / "project").mkdir(parents=True)
    return FileMemoryStore(LayerSet.from_directory(root / "project"), root / "data",
                           profile=embedder.profile.to_dict(), dim=embedder.profile.dim,
                           embedder_metadata=embedder.metadata(), element_type=etype)


def _decisions(embedder: Embedder, root: Path, etype: str) -> list[tuple[bool, float]]:
    svc = MemoryService(_store(root, embedder, etype), embedder)
    out = []
    for n, (first, second, _, _) in enumerate(PAIRS):
        svc.save(f"a{n}", first, "fact")
        got = svc.save(f"a{n}", second, "fact")
        out.append((got["status"] == "updated", float(got.get("similarity") or 0.0)))
    return out


def _size(embedder: Embedder, root: Path, etype: str, n: int) -> int:
    store = _store(root, embedder, etype)
    rng = np.random.default_rng(7)
    for start in range(0, n, 1000):
        count = min(1000, n - start)
        vecs = rng.standard_normal((count, embedder.profile.dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        store.append(Place.USER, "bench", [
            NewMemory(memory_kind("fact", "bench"), f"memory number {start + i} of the "
                      "bench, a sentence of ordinary length about a project", "mcp", 0.7,
                      (), v) for i, v in enumerate(vecs)], [])
    return store.actor_path("bench").stat().st_size


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.memory_quantised", description=__doc__)
    p.add_argument("--memories", type=int, default=10_000)
    p.add_argument("--embedder", default="minilm", choices=("minilm", "hash"))
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args(argv)
    embedder = make_embedder(opts.embedder, opts.cache)
    with tempfile.TemporaryDirectory(prefix="sediment-memory-quantised-") as tmp:
        root = Path(tmp)
        got = {t: _decisions(embedder, root / t, t) for t in TYPES}
        sizes = {t: _size(embedder, root / f"size-{t}", t, opts.memories) for t in TYPES}
    differ = sum(a[0] != b[0] for a, b in zip(got["f32"], got["i8"], strict=True))
    both = [(a[1], b[1]) for a, b in zip(got["f32"], got["i8"], strict=True) if a[0] and b[0]]
    drift = max((abs(a - b) for a, b in both), default=0.0)
    result: dict[str, Any] = {
        "pairs": len(PAIRS), "decisions_differing": differ,
        "superseded": {t: sum(d for d, _ in got[t]) for t in TYPES},
        "largest_similarity_change": round(drift, 5),
        "memories": opts.memories, "file_bytes": sizes}
    print(json.dumps(result, indent=2))
    if opts.json:
        opts.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

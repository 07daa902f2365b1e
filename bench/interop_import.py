"""``python -m bench.interop_import``: how fast an import runs, and that its memory stays
flat as the input grows.

Writes a mem0 export of ``--records`` distinct memories for one user (``{"results":
[...]}``), then imports it through ``sediment.interop.run_import`` into a fresh user store
with the hash embedder (the import's own cost: reading, checking, the dedup search and one
append per memory; a real embedder adds its own time per memory), and imports it again
(everything already stored). Prints JSON: records per second and CPU seconds for both
runs (on a shared host, wall time includes waiting for a core), and the process's peak
resident memory after each, beside the input's size: run it at two sizes to see that the
peak does not grow with the input.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from sediment.embed import HashEmbedder
from sediment.interop import FORMATS, run_import
from sediment.memory import FileMemoryStore, MemoryService
from sediment.store import LayerSet


def _export(path: Path, n: int) -> None:
    with path.open("w") as fh:
        fh.write('{"results": [\n')
        for i in range(n):
            rec = {"id": f"id-{i}", "memory": f"Fact number {i}: service {i % 97} runs on "
                   f"port {1000 + i}", "user_id": "bench", "metadata": {"i": i},
                   "created_at": "2025-01-01T00:00:00Z"}
            fh.write(("," if i else "") + json.dumps(rec) + "\n")
        fh.write("]}\n")


def _run(service: MemoryService, path: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    c0 = time.process_time()
    report = run_import(service, "mem0", FORMATS["mem0"].read, path, actor="bench",
                        scope="user", root=path.parent)
    took = time.perf_counter() - t0
    cpu = time.process_time() - c0
    n = report.created + report.existing
    return {"created": report.created, "existing": report.existing,
            "seconds": round(took, 2), "cpu_seconds": round(cpu, 2),
            "records_per_s": round(n / took, 1),
            "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=500)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = root / "mem0.json"
        _export(src, args.records)
        (root / "project").mkdir()
        emb = HashEmbedder()
        store = FileMemoryStore(LayerSet.from_directory(root / "project"), root / "data",
                                profile=emb.profile.to_dict(), dim=emb.profile.dim,
                                embedder_metadata=emb.metadata())
        service = MemoryService(store, emb)
        out = {"records": args.records, "input_mb": round(src.stat().st_size / 1e6, 2),
               "first": _run(service, src), "again": _run(service, src)}
        service.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

"""Run in a fresh process: open one layer file, touch its headers, search once; print JSON.

``python -m bench.rss_probe PATH`` reports resident memory after the imports, after the
open and after one exact vector search, from ``getrusage`` (peak) and ``/proc/self/status``
(current, split into anonymous memory and mapped file pages).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path


def _status() -> dict[str, int]:
    """VmRSS, VmHWM, RssAnon and RssFile in bytes."""
    out: dict[str, int] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) * 1024
    return out


def _snapshot() -> dict[str, int]:
    snap = _status()
    snap["maxrss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return snap


def main(path: str) -> None:
    import numpy as np

    from sediment.format import LayerFile
    from sediment.search import SearchRequest, search
    from sediment.store import LayerSet

    imports = _snapshot()
    t = time.perf_counter()
    f = LayerFile.open(path)
    header = (f.chunk_count, f.dim, f.element_type, f.embeddings.shape)
    open_s = time.perf_counter() - t
    opened = _snapshot()
    query = np.random.default_rng(1).standard_normal(header[1]).astype(np.float32)
    query /= np.linalg.norm(query)
    ls = LayerSet({"base": path})
    t = time.perf_counter()
    search(ls, SearchRequest(text=None, k=10, mode="vector"), query, normalised=True)
    search_s = time.perf_counter() - t
    searched = _snapshot()
    print(json.dumps({"imports": imports, "opened": opened, "searched": searched,
                      "open_s": open_s, "first_search_s": search_s,
                      "file_bytes": f.size}))


if __name__ == "__main__":
    main(sys.argv[1])

"""Run in a fresh process: open one layer file, touch its headers, search once; print JSON.

``python -m bench.rss_probe PATH`` reports resident memory after the imports, after the
open and after one exact vector search, from ``getrusage`` (peak) and ``/proc/self/status``
(current, split into anonymous memory and mapped file pages; ``VmHWM`` is the peak too).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

from bench import procmem


def _snapshot() -> dict[str, int]:
    snap = procmem.status()
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


def run_forked(path: str) -> int:
    """Do the work in a forked child of this still-small process.

    Linux folds the pre-exec address space's high-water mark into ``ru_maxrss`` at exec, so
    a process spawned by a big parent (the benchmark, gigabytes after building 1M chunks)
    starts with the parent's peak as its own. A child forked here starts from this small
    interpreter instead, so its ``getrusage`` peak is its own.
    """
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            main(path)
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(run_forked(sys.argv[1]))

"""``python -m bench.first_query_probe DIR QUERY [--no-lexicon-file] [--exact]``: one process.

Imports Sediment, loads MiniLM (one embed call, then its profile, which hashes the model
file once per process), then answers two hybrid searches of the
layer set in DIR through ``ops.run_search`` (what ``sediment search`` calls) and prints
JSON timings: the first query pays every per-process cost (opening the layer, the
approximate index, the BM25 postings), the second shows the steady state. With
``--no-lexicon-file`` the postings are built from the layer's strings in memory and not
written, as every process did before lexicon files existed; with ``--exact`` the vector
side scans the matrix instead of opening the approximate index.
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> None:
    t0 = time.perf_counter()
    from sediment.embed import make_embedder
    from sediment.ops.query import run_search
    from sediment.search import SearchRequest, lexicon
    from sediment.store import LayerSet

    directory, query = argv[0], argv[1]
    if "--no-lexicon-file" in argv:
        lexicon.PERSIST_MIN_CHUNKS = 2**63
    imports_s = time.perf_counter() - t0
    t = time.perf_counter()
    embedder = make_embedder("minilm", cache_path=None)
    embedder.embed(["load the model"])
    model_s = time.perf_counter() - t
    t = time.perf_counter()
    embedder.profile.to_dict()  # MiniLM hashes its model file on first use of its profile
    digest_s = time.perf_counter() - t
    ls = LayerSet.from_directory(directory)
    t = time.perf_counter()
    exact = "--exact" in argv
    first = run_search(ls, SearchRequest(text=query, k=10, exact=exact), embedder=embedder)
    _ = [h.chunk.content for h in first.hits]
    first_s = time.perf_counter() - t
    t = time.perf_counter()
    second = run_search(ls, SearchRequest(text=query + " again", k=10, exact=exact),
                        embedder=embedder)
    _ = [h.chunk.content for h in second.hits]
    second_s = time.perf_counter() - t
    print(json.dumps({"imports_s": imports_s, "model_s": model_s, "digest_s": digest_s,
                      "first_s": first_s,
                      "second_s": second_s, "first_timings_ms": first.timings_ms,
                      "approximate": any(h.approximate for h in first.hits),
                      "hits": len(first.hits)}))


if __name__ == "__main__":
    main(sys.argv[1:])

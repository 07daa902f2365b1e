"""MCP round trips: ``agents_search`` and ``agents_context_write`` against a real server.

    python -m bench.mcp [--chunks 100000] [--queries 200] [--writes 200] [--out docs/mcp.md]

The store holds ``--chunks`` base chunks whose vectors are synthetic unit vectors recorded
under the real MiniLM profile, so text queries are embedded by the real model inside the
server (the embedding time is measured separately, in this process, on the same queries).
Each transport gets a fresh ``sediment serve`` subprocess driven by the SDK's client.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from bench import fmt, synthetic
from bench.machine import describe
from bench.timing import Stats
from mcp import Client
from sediment.embed import MiniLMEmbedder
from sediment.format import encode_layer

SEDIMENT = str(Path(sys.executable).parent / "sediment")
TOKEN = "bench-token-0123456789abcdef"


def build_store(directory: Path, n: int) -> dict[str, Any]:
    emb = MiniLMEmbedder()
    profile = emb.profile.to_dict()
    contents = synthetic.texts(n, seed=11)
    vectors = synthetic.unit_vectors(n, profile["dim"], seed=12)
    md = {"v": 1, "embedding_profile": profile, "id_high_water": n}
    data = encode_layer(synthetic.chunks(contents), vectors, metadata=md)
    (directory / "AGENTS.db").write_bytes(data)
    return {"bytes": len(data)}


async def _drive(client: Client, queries: list[str], vecs: np.ndarray, writes: int
                 ) -> dict[str, Stats]:
    await client.call_tool("agents_search", {"query": queries[0], "k": 10})  # BM25 + model
    for q in queries[:5]:
        await client.call_tool("agents_search", {"query": q, "k": 10})
    out: dict[str, list[float]] = {"text": [], "vector": [], "write": []}
    for q, v in zip(queries, vecs, strict=True):
        t = time.perf_counter()
        r = await client.call_tool("agents_search", {"query": q, "k": 10})
        out["text"].append(time.perf_counter() - t)
        assert not r.is_error, r.content
        t = time.perf_counter()
        r = await client.call_tool("agents_search", {"query_vec": v.tolist(), "k": 10})
        out["vector"].append(time.perf_counter() - t)
        assert not r.is_error, r.content
    for i in range(writes):
        t = time.perf_counter()
        r = await client.call_tool("agents_context_write", {
            "content": f"bench note {i}: {queries[i % len(queries)]}", "kind": "note",
            "confidence": 0.5, "scope": "local"})
        out["write"].append(time.perf_counter() - t)
        assert not r.is_error, r.content
    return {k: Stats(tuple(v)) for k, v in out.items()}


def run_stdio(store: Path, queries: list[str], vecs: np.ndarray, writes: int
              ) -> dict[str, Stats]:
    params = StdioServerParameters(command=SEDIMENT, args=["serve", "--dir", str(store)],
                                   env=dict(os.environ))

    async def main() -> dict[str, Stats]:
        with anyio.fail_after(1800):
            async with Client(params) as client:
                return await _drive(client, queries, vecs, writes)

    return anyio.run(main)


def run_http(store: Path, queries: list[str], vecs: np.ndarray, writes: int
             ) -> dict[str, Stats]:
    import httpx

    port = 18765
    proc = subprocess.Popen([SEDIMENT, "serve", "--transport", "http", "--port", str(port),
                             "--dir", str(store), "--token", TOKEN],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url, timeout=1.0)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the HTTP server did not start") from None
                time.sleep(0.2)

        async def main() -> dict[str, Stats]:
            with anyio.fail_after(1800):
                http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
                async with http, Client(streamable_http_client(url, http_client=http)) as c:
                    return await _drive(c, queries, vecs, writes)

        return anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def embedding_times(queries: list[str]) -> tuple[Stats, np.ndarray]:
    emb = MiniLMEmbedder()
    emb.embed(queries[:5])
    samples, vecs = [], []
    for q in queries:
        t = time.perf_counter()
        vecs.append(emb.embed([q])[0])
        samples.append(time.perf_counter() - t)
    return Stats(tuple(samples)), np.stack(vecs)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.mcp", description=__doc__)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--out", type=Path, default=Path("docs/mcp.md"))
    args = ap.parse_args(argv)
    command = "python -m bench.mcp " + " ".join(argv if argv is not None else sys.argv[1:])
    machine = describe(command.strip())
    queries = synthetic.query_texts(args.queries, seed=13)
    embed_stats, vecs = embedding_times(queries)
    rows = []
    with tempfile.TemporaryDirectory(prefix="sediment-mcp-bench-") as tmp:
        for transport, runner in (("stdio", run_stdio), ("http", run_http)):
            store = Path(tmp) / transport
            store.mkdir()
            info = build_store(store, args.chunks)
            print(f"{transport}: store of {args.chunks} chunks ({fmt.mb(info['bytes'])})",
                  file=sys.stderr)
            stats = runner(store, queries, vecs, args.writes)
            w = stats["write"]
            rows.append([transport, fmt.ms(stats["text"].p50), fmt.ms(stats["text"].p99),
                         "PASS" if stats["text"].p99 < 0.050 else "FAIL",
                         fmt.ms(stats["vector"].p50), fmt.ms(stats["vector"].p99),
                         fmt.ms(w.p50), fmt.ms(w.p99), f"{1.0 / w.mean:.0f}"])
    lines = [
        "## Round trips",
        "",
        f"Command: `{command.strip()}` on {machine.date}. Machine: {machine.cpu}, "
        f"{machine.usable_cores} usable cores, {fmt.mb(machine.ram_bytes)} RAM, Python "
        f"{machine.python}; load average at start {machine.load_start[0]:.2f}.",
        "",
        f"Store: {args.chunks:,} base chunks (384-dim f32, synthetic unit vectors recorded "
        "under the real all-MiniLM-L6-v2 profile; short synthetic texts for BM25). Each "
        "transport runs a fresh `sediment serve` subprocess driven by the MCP SDK client; "
        f"{args.queries} text queries (hybrid: embedding + vector scan + BM25 + fusion, "
        f"k = 10), the same {args.queries} as explicit query vectors, then {args.writes} "
        "writes of one chunk each to the local layer (embedding included).",
        "",
        fmt.table(["transport", "text p50", "text p99", "p99 < 50 ms", "vector p50",
                   "vector p99", "write p50", "write p99", "writes/s"], rows),
        "",
        f"Query embedding alone (MiniLM int8, in-process, same queries): p50 "
        f"{fmt.ms(embed_stats.p50)}, p99 {fmt.ms(embed_stats.p99)}.",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(keep_reference(args.out) + "\n".join(lines))
    print("\n".join(lines))


MARKER = "<!-- python -m bench.mcp rewrites everything below this line -->"


def keep_reference(out: Path) -> str:
    """The hand-written part of the page (the tools' reference), above ``MARKER``."""
    old = out.read_text() if out.exists() else ""
    head, found, _ = old.partition(MARKER)
    return head + MARKER + "\n\n" if found else "# MCP\n\n" + MARKER + "\n\n"


if __name__ == "__main__":
    main()

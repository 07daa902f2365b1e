"""``python -m bench.persona_overhead``: what running Lua personas in killable worker
processes adds per resolution.

One small store (the three chunks of the MCP tests, hash embedder) and two personas: one
that only builds its prompt, and one that makes three ``context.search`` calls and a
``context.get`` (each a message to the parent and back). Each is resolved ``--resolutions``
times both ways, alternating so a slow spell of the shared machine hits both: *in process*
is how resolutions ran before (a fresh sandbox in the caller's thread, the same code the
worker runs), *worker* is ``LuaPersona.resolve`` through a warm pool of one worker. Then
``--starts`` cold worker starts (what the first resolution after start-up, or the one after
a worker was killed, pays on top). Prints p50 / p99 in milliseconds as JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from sediment.agents import LuaPersona
from sediment.agents.lua import DEFAULT_MEMORY, _Run, agent_table
from sediment.agents.model import PersonaContext
from sediment.agents.workers import WorkerPool, _Worker
from sediment.embed import HashEmbedder
from sediment.format import Chunk, encode_layer
from sediment.ops.service import ContextService
from sediment.server.prompts import ServiceContext
from sediment.store import LayerSet

SCRIPTS = {
    "prompt only": "return { system = 'You review ' .. (args.lang or 'code') .. '.' }",
    "3 searches + 1 get": """
        local out = {}
        for _, q in ipairs({ 'deploy', 'billing header', 'layer precedence' }) do
          local hits = context.search({ query = q, k = 2 })
          out[#out + 1] = hits[1] and hits[1].content or ''
        end
        local doc = context.get(1)
        return { system = table.concat(out, '\\n') .. (doc and doc.content or '') }""",
}


def _store(directory: Path) -> ServiceContext:
    emb = HashEmbedder()
    docs = ["Layer precedence is local over user over delta over base.",
            "Requests to /billing MUST include the X-Account header.",
            "The deploy job pushes containers to staging every night."]
    chunks = [Chunk(i, "canonical", t, "human", 1.0, 0, ("docs/a.md:1",))
              for i, t in enumerate(docs, 1)]
    directory.mkdir(parents=True)
    (directory / "AGENTS.db").write_bytes(encode_layer(
        chunks, emb.embed(docs), metadata={"v": 1, "embedding_profile": emb.profile.to_dict()}))
    return ServiceContext(ContextService(LayerSet.from_directory(directory), emb))


def _in_process(p: LuaPersona, context: PersonaContext) -> None:
    """A resolution as it ran before the workers: the sandbox in the caller's thread."""
    run = _Run(p.info.name, p.timeout, DEFAULT_MEMORY)
    agent = agent_table(run, p.info.name, p.source, p.path.name)
    bridge = run.bridge(context)
    value = run.guard(lambda: agent["resolve"](run.to_lua({"lang": "Go"}),
                                               run.to_lua(p.config), bridge))
    run.guard(lambda: run.to_python(value))


def _ms(samples: list[float]) -> dict[str, float]:
    arr = np.asarray(samples) * 1000
    return {"p50": round(float(np.median(arr)), 3),
            "p99": round(float(np.percentile(arr, 99)), 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--resolutions", type=int, default=300)
    ap.add_argument("--starts", type=int, default=10)
    args = ap.parse_args(argv)
    out: dict[str, Any] = {"args": vars(args)}
    pool = WorkerPool(1)
    with tempfile.TemporaryDirectory() as tmp:
        context = _store(Path(tmp) / "store")
        for label, body in SCRIPTS.items():
            script = Path(tmp) / "p.lua"
            script.write_text("local agent = { description = 'bench' }\n"
                              f"function agent.resolve(args, config, context)\n{body}\nend\n"
                              "return agent\n")
            p = LuaPersona("bench", script, config={}, allowed=frozenset(), aliases={},
                           timeout=30, pool=pool)
            for _ in range(10):
                p.resolve({}, context)
                _in_process(p, context)
            inproc: list[float] = []
            worker: list[float] = []
            for _ in range(args.resolutions):
                t = time.perf_counter()
                _in_process(p, context)
                inproc.append(time.perf_counter() - t)
                t = time.perf_counter()
                p.resolve({}, context)
                worker.append(time.perf_counter() - t)
            added = [w - i for w, i in zip(worker, inproc, strict=True)]
            out[label] = {"in process": _ms(inproc), "worker": _ms(worker),
                          "added": _ms(added)}
    pool.close()
    starts: list[float] = []
    for _ in range(args.starts):
        t = time.perf_counter()
        w = _Worker()
        starts.append(time.perf_counter() - t)
        w.kill()
    out["cold worker start"] = _ms(starts)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

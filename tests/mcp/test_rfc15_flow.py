"""RFC 15 end to end with a real agent connection: compile, an agent writes and proposes over
MCP, a human reviews with the CLI, CI compacts and signs, the server requires the signature."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from tests import zygote
from tests.conftest import Runner
from tests.mcp.conftest import SEDIMENT

GUIDE = "# Billing\n\nRequests to /billing MUST include the X-Account header.\n"


def serve_params(root: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=zygote.script(SEDIMENT), args=[
        "serve", "--dir", str(root), "--embedder", "hash", "--no-warm-up", *extra],
        env=dict(os.environ))


def test_rfc15_flow_with_an_mcp_agent(sediment: Runner, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "billing.md").write_text(GUIDE)
    assert sediment("compile", "--root", str(root), "--include", "**/*.md", "--out",
                    str(root / "AGENTS.db")).code == 0

    async def agent() -> tuple[int, int]:
        with anyio.fail_after(60):
            async with Client(serve_params(root)) as client:
                r = await client.call_tool("agents_context_write", {
                    "content": "Billing requests also need an Idempotency-Key header.",
                    "kind": "invariant", "confidence": 0.8,
                    "sources": ["src/billing.py:40"], "scope": "delta"})
                assert not r.is_error, r.content
                chunk = int(r.structured_content["id"])
                r = await client.call_tool("agents_context_propose", {"context_id": chunk,
                                                                      "target": "user"})
                assert not r.is_error, r.content
                return chunk, int(r.structured_content["proposal_id"])

    chunk, proposal = anyio.run(agent)

    diff = sediment("diff", "--dir", str(root), "--json").json()
    assert [p["proposal_id"] for p in diff["pending_proposals"]] == [proposal]
    assert sediment("proposals", "accept", str(proposal), "--dir", str(root)).code == 0
    out = root / "AGENTS.db.new"
    assert sediment("compact", "--dir", str(root), "--out", str(out)).code == 0
    keys = tmp_path / "keys"
    assert sediment("keygen", "--out", str(keys / "ci.key")).code == 0
    assert sediment("sign", str(out), "--key", str(keys / "ci.key")).code == 0
    out.replace(root / "AGENTS.db")
    (root / "AGENTS.db.new.sig").replace(root / "AGENTS.db.sig")
    pub = str(keys / "ci.key.pub")

    async def reader() -> None:
        with anyio.fail_after(60):
            async with Client(serve_params(root, "--require-signature", pub)) as client:
                r = await client.call_tool("agents_search", {
                    "query": "Idempotency-Key header", "k": 1, "layers": ["base"]})
                top = r.structured_content["results"][0]
                assert (top["id"], top["layer"]) == (chunk, "base")

    anyio.run(reader)

    data = bytearray((root / "AGENTS.db").read_bytes())
    data[-1] ^= 0x01
    (root / "AGENTS.db").write_bytes(bytes(data))
    p = subprocess.run([zygote.script(SEDIMENT), "serve", "--dir", str(root), "--embedder", "hash",
                        "--require-signature", pub], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 1 and p.stderr.startswith("Error: ")
    assert "signature" in p.stderr and "Traceback" not in p.stderr
    r = sediment("search", "billing", "--dir", str(root), "--require-signature", pub)
    assert r.code == 1 and "signature" in r.err

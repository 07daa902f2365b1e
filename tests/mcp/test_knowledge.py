"""KCP over MCP: compile a project with a knowledge.yaml (real CLI), serve it over stdio."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from tests import zygote
from tests.cli.conftest import Runner
from tests.kcp.helpers import write_tree
from tests.kcp.project import DOCS
from tests.mcp.conftest import SEDIMENT


def test_search_knowledge_and_unit_resources(sediment: Runner, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", DOCS)
    r = sediment("compile", "--root", str(root), "--include", "docs/tokens.md", "--out",
                 str(root / "AGENTS.db"))
    assert r.code == 0, r.err
    params = StdioServerParameters(command=zygote.script(SEDIMENT), args=[
        "serve", "--dir", str(root), "--embedder", "hash", "--no-warm-up"],
        env=dict(os.environ))

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                assert "search_knowledge" in tools
                r = await client.call_tool("search_knowledge", {
                    "query": "rollout to production", "audience": "agent"})
                assert not r.is_error, r.content
                units = r.structured_content["units"]
                assert units[0]["unit_id"] == "deploy-v3"
                assert "deploy-v2" not in [u["unit_id"] for u in units]
                first = units[0]["load_first"]
                assert first and first[0].endswith("/overview") and first[1].endswith("/cluster")
                assert units[0]["uri"].startswith("knowledge://")
                r = await client.call_tool("search_knowledge", {"query": "deploy",
                                                                "scope": "galaxy"})
                assert r.is_error and "scope" in r.content[0].text
                listed = {str(x.uri) for x in (await client.list_resources()).resources}
                unit_uri = units[0]["uri"]
                assert unit_uri in listed
                text = (await client.read_resource(unit_uri)).contents[0].text
                assert "Ship to production" in text
                project = unit_uri.rsplit("/", 1)[0]
                manifest = (await client.read_resource(project)).contents[0].text
                assert "kcp_version" in manifest

    anyio.run(main)

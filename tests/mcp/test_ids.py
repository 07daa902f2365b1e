"""Chunk ids reaching the MCP server as text (sources, resource URIs) are parsed strictly.

Before, ``sources: ["²"]`` and ``agentsdb://chunks/²`` ended in internal errors (``'²'`` is
``isdigit()`` but not ``int()``-able), ``sources: [" 1"]`` was taken as chunk 1, and a
5,000-digit id raised ValueError from ``int()``.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from mcp import Client
from sediment.server import build_server
from tests.conftest import files_workspace

BAD_TEXT = ["²", "٣", "9" * 5000, "0", "-1", " 1", "1 ", "1_0"]
BAD_NUMBERS = [0, -1, 2**32, 10**5000]


def test_bad_ids_in_sources_resources_and_proposals(store: Path) -> None:
    server = build_server(files_workspace(store))
    write = {"content": "c", "kind": "note", "confidence": 0.5}

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(server) as client:
                for value in [*BAD_TEXT, *BAD_NUMBERS, "a.md:3\n", "a.md:٣"]:
                    r = await client.call_tool("agents_context_write",
                                               {**write, "sources": [value]})
                    text = r.content[0].text  # type: ignore[union-attr]
                    assert r.is_error and "sources[0]" in text, (str(value)[:20], text)
                    assert ("not a chunk id" in text or "path:line" in text
                            or "the maximum is 4096" in text or "must be at least 1" in text
                            or "must be at most 4294967295" in text), text
                    assert len(text) < 500
                for raw in BAD_TEXT:
                    for uri in (f"agentsdb://chunks/{raw}",
                                f"agentsdb://layers/base/chunks/{raw}"):
                        with pytest.raises(MCPError, match="not a chunk id"):
                            await client.read_resource(uri)
                for number in (2**32, 10**5000):
                    r = await client.call_tool("agents_context_propose",
                                               {"context_id": number})
                    text = r.content[0].text  # type: ignore[union-attr]
                    assert r.is_error and "context_id: must be at most 4294967295" in text
                    assert len(text) < 500
                ok = await client.read_resource("agentsdb://chunks/0001")
                assert "Layer precedence" in ok.contents[0].text  # type: ignore[union-attr]
                r = await client.call_tool("agents_context_write", {**write, "sources": ["2"]})
                assert not r.is_error

    anyio.run(main)

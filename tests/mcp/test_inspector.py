"""A client nobody here wrote: the official MCP Inspector CLI against our HTTP server.

`./run test` installs the Inspector from the npm registry into build/npm (pinned version);
SEDIMENT_INSPECTOR may point at another copy of its `mcp-inspector` script.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.mcp.conftest import TOKEN, HttpServer

INSPECTOR = Path(os.environ.get("SEDIMENT_INSPECTOR",
                                REPO / "build" / "npm" / "node_modules" / ".bin" / "mcp-inspector"))


@pytest.fixture
def inspector(http_server: HttpServer, tmp_path: Path) -> Iterator[Any]:
    if not INSPECTOR.exists():
        pytest.fail(f"{INSPECTOR} is missing: `./run test` installs the MCP Inspector")

    def call(*args: str, expect_tool_error: bool = False) -> dict[str, Any]:
        p = subprocess.run(
            [str(INSPECTOR), "--cli", http_server.url, "--transport", "http",
             "--header", f"Authorization: Bearer {TOKEN}", *args],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
            env={**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")})
        # The Inspector exits 5 when a tool answered isError (and still prints the result).
        assert p.returncode == (5 if expect_tool_error else 0), p.stderr or p.stdout
        result: dict[str, Any] = json.loads(p.stdout)
        return result

    yield call
    assert http_server.process.poll() is None, "the server died during the Inspector's calls"


def test_inspector_drives_the_whole_flow(inspector: Any) -> None:
    tools = inspector("--method", "tools/list")
    names = {t["name"] for t in tools["tools"]}
    assert {"agents_search", "agents_context_write", "agents_context_propose"} <= names

    found = inspector("--method", "tools/call", "--tool-name", "agents_search",
                      "--tool-arg", "query=billing header", "--tool-arg", "k=1")
    assert found["structuredContent"]["results"][0]["id"] == 2

    wrote = inspector("--method", "tools/call", "--tool-name", "agents_context_write",
                      "--tool-arg", "content=Staging deploys pause during the freeze.",
                      "--tool-arg", "kind=note", "--tool-arg", "confidence=0.6",
                      "--tool-arg", "scope=delta",
                      "--tool-arg", 'sources=["docs/c.md:9"]')
    assert not wrote.get("isError"), wrote
    new_id = wrote["structuredContent"]["id"]

    again = inspector("--method", "tools/call", "--tool-name", "agents_search",
                      "--tool-arg", "query=staging deploys freeze", "--tool-arg", "k=1")
    assert again["structuredContent"]["results"][0]["id"] == new_id

    proposed = inspector("--method", "tools/call", "--tool-name", "agents_context_propose",
                         "--tool-arg", f"context_id={new_id}", "--tool-arg", "target=user")
    assert proposed["structuredContent"]["context_id"] == new_id

    bad = inspector("--method", "tools/call", "--tool-name", "agents_context_write",
                    "--tool-arg", "content=x", "--tool-arg", "kind=note",
                    "--tool-arg", "confidence=2", "--tool-arg", "scope=base",
                    expect_tool_error=True)
    assert bad["isError"] is True
    assert "confidence: must be at most 1.0" in bad["content"][0]["text"]

    chunk = inspector("--method", "resources/read", "--uri", f"agentsdb://chunks/{new_id}")
    assert "Staging deploys pause" in chunk["contents"][0]["text"]


def test_inspector_drives_the_memory_tools(inspector: Any) -> None:
    saved = inspector("--method", "tools/call", "--tool-name", "save_memory",
                      "--tool-arg", "content=Staging deploys need a second reviewer.",
                      "--tool-arg", "category=convention", "--tool-arg", "scope=project")
    assert saved["structuredContent"]["status"] == "created"
    got = inspector("--method", "tools/call", "--tool-name", "recall_memories",
                    "--tool-arg", "query=staging deploy review", "--tool-arg", "limit=3")
    assert got["structuredContent"]["memories"][0]["id"] == saved["structuredContent"]["id"]
    bad = inspector("--method", "tools/call", "--tool-name", "recall_memories",
                    "--tool-arg", "query=x", "--tool-arg", "limit=51",
                    expect_tool_error=True)
    assert "limit" in bad["content"][0]["text"]
    prompt = inspector("--method", "prompts/get", "--prompt-name", "memory_guidelines")
    assert "save_memory" in prompt["messages"][0]["content"]["text"]

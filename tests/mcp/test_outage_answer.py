"""How an MCP POST is answered while the store is down (:mod:`sediment.server.outage`):
a tool call gets an ``isError`` result, any other request a JSON-RPC error, a
notification nothing (202); HTTP 200 either way, so the SDK keeps its session."""

from __future__ import annotations

import json
from typing import Any

import anyio

from sediment.server.outage import answer_outage

TEXT = "the team store (PostgreSQL) is unavailable: cannot connect to the database server"


def _answer(body: Any, version: str = "2025-06-18") -> tuple[int, dict[bytes, bytes], Any]:
    sent: list[dict[str, Any]] = []
    chunks = [{"type": "http.request", "body": json.dumps(body).encode()[:5],
               "more_body": True},
              {"type": "http.request", "body": json.dumps(body).encode()[5:]}]

    async def receive() -> dict[str, Any]:
        return chunks.pop(0)

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    scope = {"type": "http", "method": "POST", "path": "/mcp",
             "headers": [(b"mcp-session-id", b"abc"),
                         (b"mcp-protocol-version", version.encode())]}
    anyio.run(answer_outage, scope, receive, send, TEXT)
    start, end = sent
    payload = json.loads(end["body"]) if end["body"] else None
    return start["status"], dict(start["headers"]), payload


def test_a_tool_call_gets_an_error_result() -> None:
    status, headers, got = _answer({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                    "params": {"name": "search", "arguments": {}}})
    assert status == 200 and headers[b"mcp-session-id"] == b"abc"
    assert got == {"jsonrpc": "2.0", "id": 7, "result": {
        "content": [{"type": "text", "text": TEXT}], "isError": True}}
    _, _, modern = _answer({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}, "2026-07-28")
    assert modern["result"]["resultType"] == "complete"


def test_other_requests_get_a_json_rpc_error_and_notifications_nothing() -> None:
    status, _, got = _answer({"jsonrpc": "2.0", "id": "r", "method": "resources/read"})
    assert status == 200 and got["error"]["message"] == TEXT and got["id"] == "r"
    status, _, got = _answer({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert status == 202 and got is None
    status, _, got = _answer([{"jsonrpc": "2.0", "id": 1, "method": "tools/call"},
                              {"jsonrpc": "2.0", "method": "notifications/cancelled"}])
    assert status == 200 and [r["id"] for r in got] == [1]

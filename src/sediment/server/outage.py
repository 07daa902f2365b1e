"""An MCP request that arrives while the store is down, answered inside MCP.

Authenticating a request reads the tokens in the store, so during a PostgreSQL outage no
request reaches the tools. An HTTP 503 there is an error of the transport, which the MCP
SDK reports as "Server returned an error response" instead of the cause; so a JSON-RPC
POST to the MCP endpoint gets HTTP 200 with, per request, a tool result with ``isError``
(``tools/call``) or a JSON-RPC error (any other method) whose text names the store and
what failed. The session stays open and works again once the store is back. The HTTP API
and the web page keep answering 503.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Receive, Scope, Send

from sediment.server.disclosure import read_body, send_json

INTERNAL_ERROR = -32603
RESULT_TYPE_SINCE = "2026-07-28"
"""The first protocol version whose results must say ``resultType``."""


def _reply(message: Any, text: str, version: str) -> dict[str, Any] | None:
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None  # a notification or a response: nothing answers it
    if message["method"] == "tools/call":
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
        if version >= RESULT_TYPE_SINCE:
            result["resultType"] = "complete"
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return {"jsonrpc": "2.0", "id": message["id"],
            "error": {"code": INTERNAL_ERROR, "message": text}}


async def answer_outage(scope: Scope, receive: Receive, send: Send, text: str) -> None:
    """Answer the JSON-RPC message(s) of this POST with ``text`` as their failure."""
    try:
        message = json.loads((await read_body(receive))[0])
    except ValueError:
        message = None
    batch = message if isinstance(message, list) else [message]
    sent = dict(scope.get("headers") or [])
    version = sent.get(b"mcp-protocol-version", b"").decode("ascii", "replace")
    replies = [r for m in batch if (r := _reply(m, text, version)) is not None]
    headers = [(k, v) for k, v in sent.items() if k == b"mcp-session-id"]
    if not replies:
        await send({"type": "http.response.start", "status": 202, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    await send_json(send, 200, replies if isinstance(message, list) else replies[0], headers)

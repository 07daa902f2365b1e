"""MCP over stdio, answering every line it cannot read.

The SDK's stdio transport passes a line it cannot parse on as an exception, which the
server drops: a lone surrogate escape (``"\\ud800"``, common from JavaScript clients) or
JSON nested 1,000 deep got no response at all and nothing was logged, so the client
waited for its timeout. Here such a line gets a JSON-RPC error naming the problem, with
the request's id when it can be found in the line, and a line on stderr.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import anyio
import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_log = logging.getLogger("sediment.server")
_ID = re.compile(r'"id"\s*:\s*(-?[0-9]{1,18}|"(?:[^"\\]|\\.){0,256}")')


def request_id(line: str) -> str | int | None:
    """The id of the request ``line`` holds, if it can be found."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        got = data.get("id")
        return got if isinstance(got, str | int) and not isinstance(got, bool) else None
    m = _ID.search(line[:4096])
    if m is None:
        return None
    try:
        found = json.loads(m.group(1))
    except ValueError:
        return None
    return found if isinstance(found, str | int) else None


def describe(exc: Exception) -> tuple[int, str, str | int | None]:
    """(JSON-RPC error code, what was wrong, the request's id) for a line that failed."""
    if not isinstance(exc, pydantic.ValidationError):
        return PARSE_ERROR, f"the message could not be read: {exc}", None
    first: dict[str, Any] = dict(exc.errors()[0]) if exc.errors() else {}
    line = first.get("input") if isinstance(first.get("input"), str) else ""
    assert isinstance(line, str)
    rid = request_id(line)
    if first.get("type") != "json_invalid":
        return INVALID_REQUEST, ("the message is JSON but not a JSON-RPC 2.0 request, "
                                 "notification or response"), rid
    why = str(first.get("msg", "")).removeprefix("Invalid JSON: ")
    if "hex escape" in why or "surrogate" in why:
        text = (f"the message holds a lone surrogate escape such as \\ud800 ({why}); send "
                "each character outside the Basic Multilingual Plane as a surrogate pair")
    elif "recursion limit" in why:
        text = f"the message nests arrays and objects too deeply ({why})"
    else:
        text = f"the message is not valid JSON ({why})"
    return PARSE_ERROR, text, rid


async def run_stdio(server: MCPServer) -> None:
    """``server`` over stdin and stdout until stdin closes."""
    lowlevel = server._lowlevel_server
    async with stdio_server() as (incoming, outgoing):
        screened_in, screened = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def screen() -> None:
            async with screened_in:
                async for item in incoming:
                    if not isinstance(item, Exception):
                        await screened_in.send(item)
                        continue
                    code, text, rid = describe(item)
                    _log.warning("refused a message on stdin: %s", text)
                    await outgoing.send(SessionMessage(JSONRPCError(
                        jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=text))))

        async with anyio.create_task_group() as tg:
            tg.start_soon(screen)
            await lowlevel.run(screened, outgoing, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()

"""What an error tells a caller of the server: never where the store lives.

A :class:`~sediment.errors.StoreUnavailableError` names the store (a team server's URL,
without its password, and why the connection failed). Callers over HTTP and MCP, readers
included, get only that the store is unavailable; the server's log (stderr) gets the rest,
for whoever runs the server (issue 26 item 11).
"""

from __future__ import annotations

import json
import logging

from starlette.types import Send

from sediment.errors import StoreUnavailableError

UNAVAILABLE = "the store is unavailable; the server's log says why"
_log = logging.getLogger("sediment.server")


def public_message(exc: BaseException) -> str:
    """The text of ``exc`` a caller may read."""
    if isinstance(exc, StoreUnavailableError):
        _log.warning("%s", exc)
        return UNAVAILABLE
    return str(exc)


async def send_error(send: Send, status: int, code: str, message: str,
                     headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """Answer an ASGI request with the API's JSON error body, before any endpoint ran."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *headers,
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def mcp_message(exc: BaseException) -> str:
    """The text of ``exc`` an MCP result carries (a tool's, a resource's, a prompt's): an
    outage names the store and what failed (never where the store lives), so the model
    can tell the user and retry."""
    if isinstance(exc, StoreUnavailableError):
        _log.warning("%s", exc)
        return (f"the team store (PostgreSQL) is unavailable: {exc.cause}; retry shortly "
                "(the server's log says why)")
    return public_message(exc)

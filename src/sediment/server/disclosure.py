"""What an error tells a caller of the server: never where the store lives.

A :class:`~sediment.errors.StoreUnavailableError` names the store (a team server's URL,
without its password, and why the connection failed). Callers over HTTP and MCP, readers
included, get only that the store is unavailable; the server's log (stderr) gets the rest,
for whoever runs the server (issue 26 item 11).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from starlette.types import Receive, Send

from sediment.errors import StoreUnavailableError

UNAVAILABLE = "the store is unavailable; the server's log says why"
_log = logging.getLogger("sediment.server")


def public_message(exc: BaseException) -> str:
    """The text of ``exc`` a caller may read."""
    if isinstance(exc, StoreUnavailableError):
        _log.warning("%s", exc)
        return UNAVAILABLE
    return str(exc)


async def send_json(send: Send, status: int, value: object,
                    headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """Answer an ASGI request with ``value`` as its JSON body."""
    body = json.dumps(value).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *headers,
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def send_error(send: Send, status: int, code: str, message: str,
                     headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """Answer an ASGI request with the API's JSON error body, before any endpoint ran."""
    await send_json(send, status, {"error": {"code": code, "message": message}}, headers)


async def read_body(receive: Receive, limit: int | None = None) -> tuple[bytes, bool]:
    """An ASGI request's body, and whether more follows (it was longer than ``limit``)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), False
        if limit is not None and size > limit:
            return b"".join(chunks), True


def mcp_message(exc: BaseException) -> str:
    """The text of ``exc`` an MCP result carries (a tool's, a resource's, a prompt's): an
    outage names the store and what failed (never where the store lives), so the model
    can tell the user and retry."""
    if isinstance(exc, StoreUnavailableError):
        _log.warning("%s", exc)
        return (f"the team store (PostgreSQL) is unavailable: {exc.cause}; retry shortly "
                "(the server's log says why)")
    return public_message(exc)

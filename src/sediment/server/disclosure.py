"""What an error tells a caller of the server: never where the store lives.

A :class:`~sediment.errors.StoreUnavailableError` names the store (a team server's URL,
without its password, and why the connection failed). Callers over HTTP and MCP, readers
included, get only that the store is unavailable; the server's log (stderr) gets the rest,
for whoever runs the server (issue 26 item 11).
"""

from __future__ import annotations

import logging

from sediment.errors import StoreUnavailableError

UNAVAILABLE = "the store is unavailable; the server's log says why"
_log = logging.getLogger("sediment.server")


def public_message(exc: BaseException) -> str:
    """The text of ``exc`` a caller may read."""
    if isinstance(exc, StoreUnavailableError):
        _log.warning("%s", exc)
        return UNAVAILABLE
    return str(exc)

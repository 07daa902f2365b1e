"""Adapters that serve the store to agents: MCP over stdio and streamable HTTP.

The names below are imported on first use, so importing this package does not load the
MCP SDK and the HTTP stack. Nothing here reads the configuration: the adapters hand the
servers a :class:`~sediment.workspace.Workspace` (its services, tokens and own actor).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sediment.server.http import (
        bind_socket,
        build_http_app,
        check_binding,
        check_http_path,
        is_loopback,
    )
    from sediment.server.mcp import build_server

_HOMES = {"bind_socket": "http", "build_http_app": "http", "check_binding": "http",
          "check_http_path": "http", "is_loopback": "http", "build_server": "mcp"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'sediment.server' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sediment.server.{_HOMES[name]}"), name)


__all__ = ["bind_socket", "build_http_app", "build_server", "check_binding",
           "check_http_path", "is_loopback"]

"""Adapters that serve the store to agents: MCP over stdio and streamable HTTP."""

from sediment.server.http import (
    bind_socket,
    build_http_app,
    check_binding,
    check_http_path,
    is_loopback,
)
from sediment.server.mcp import build_server
from sediment.server.tools import strict_tool

__all__ = ["bind_socket", "build_http_app", "build_server", "check_binding",
           "check_http_path", "is_loopback", "strict_tool"]

"""Streamable HTTP for the MCP server: bearer tokens off loopback, Host/Origin checks on it.

Binding to a non-loopback address without a token is refused: anyone on the network could
otherwise read and write the store, and such a server refuses every request without a
valid token even when its tokens are later revoked (:class:`FailClosed`). On every loopback
bind (127.0.0.0/8, ::1 however it is written, ``localhost``) :class:`HostGuard` checks the
Host and Origin headers of every endpoint against loopback names only, so a web page cannot
reach a local server through a name it rebound to 127.0.0.1; a token, when given or once
one exists, is required there too. (The SDK's own check matches by prefix, so it is off.)
"""

from __future__ import annotations

import errno
import ipaddress
import re
import socket
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from sediment.auth.tokens import FailClosed, TokenCheck, TokenList
from sediment.errors import ConfigError
from sediment.server.hosts import HostGuard, policy_for
from sediment.server.lifecycle import ShutdownHooks
from sediment.server.oauth import ResourceServer
from sediment.server.principals import ActorAuth

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None, tokens: TokenCheck, *,
                  oauth: bool = False) -> None:
    """Refuse a bind off loopback that nothing authenticates: no shared ``token``, no
    identity provider (``oauth``), and no actor token in ``tokens`` (the workspace's)."""
    if not is_loopback(host) and not token and not oauth and not tokens.any():
        raise ConfigError(f"serving on {host} (not loopback) needs a bearer token: pass "
                          "--token, set SEDIMENT_TOKEN, or create one with sediment token "
                          "create")
    if token is not None and len(token) < 16:
        raise ConfigError("the bearer token must be at least 16 characters")


_PATH = re.compile(r"^/[A-Za-z0-9._~!$&'()*+,;=:@/%-]*$")


def check_http_path(path: str) -> str:
    """The URL path of the MCP endpoint: starts with ``/``, no query, fragment or spaces."""
    if not _PATH.match(path):
        raise ConfigError(f"--path {path!r} is not a URL path: give one that starts with '/', "
                          "e.g. /mcp")
    return path


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port), bound before the server
    starts so that a taken port is a one-line error and the real port can be printed."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        why = "the address is already in use" if exc.errno == errno.EADDRINUSE else \
            (exc.strerror or str(exc))
        raise ConfigError(f"cannot listen on {host}:{port}: {why}") from exc
    sock.setblocking(False)
    return sock


def build_http_app(server: Any, *, host: str, token: str | None, tokens: TokenList,
                   actor: str, path: str = "/mcp", ui: Any = None,
                   oauth: ResourceServer | None = None) -> Any:
    """The streamable HTTP ASGI app behind bearer auth: the legacy token (acting as
    ``actor``, the server's own), or any actor token of ``tokens`` (the workspace's:
    ``sediment token create``), which binds the actor, or (with ``oauth``) an access
    token from the identity provider. Host and Origin are checked on every loopback bind
    (DNS rebinding). The web page (a :class:`sediment.server.web.WebUI`) is mounted at
    ``/ui`` when given."""
    check_binding(host, token, tokens.tokens if isinstance(tokens, FailClosed) else tokens,
                  oauth=oauth is not None)
    gate = server_gate(host, token, tokens, required=oauth is not None)
    check_http_path(path)
    app = server.streamable_http_app(
        streamable_http_path=path, host=host,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    app = ActorAuth(app, gate, actor=actor, legacy=token, oauth=oauth, mcp_path=path)
    if ui is not None:
        app = ui.mount(app, gate)
    return ShutdownHooks(HostGuard(app, policy_for(host, is_loopback(host))))


def server_gate(host: str, token: str | None, tokens: TokenList, *,
                required: bool = False) -> FailClosed:
    """Whether a request needs a token, decided once per server and shared by every
    endpoint: closed from the start off loopback, with a shared token or an identity
    provider (``required``), and closed for good once any token exists."""
    if isinstance(tokens, FailClosed):
        return tokens
    return FailClosed(tokens, required=required or token is not None or not is_loopback(host))

"""One Host and Origin rule for every endpoint of a loopback server: MCP, the API, the page.

DNS rebinding lets a web page reach a loopback server through a name it controls, so on a
loopback bind the ``Host`` header must name a loopback address and an ``Origin``, when the
browser sends one, must be ``http://`` and such a name. Both are parsed and compared
whole: a name (lower-cased, as DNS names are case-insensitive) from the allowed set and
an optional numeric port, nothing else. Matching by prefix let
``Host: 127.0.0.1:8765@evil.example`` through. Off loopback there is no name to check
against (a token is required there instead).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from sediment.server.disclosure import send_error

_HOSTPORT = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::([0-9]{1,5}))?$")
_ORIGIN = re.compile(r"^http://([^/?#]+)$")


def loopback_names(host: str) -> list[str]:
    """The names a loopback server bound to ``host`` answers to: the usual loopback names
    and the bound address as written and in its canonical forms."""
    names = {"localhost", "127.0.0.1", "[::1]"}
    bare = host.strip("[]")
    try:
        addr = ipaddress.ip_address(bare)
    except ValueError:
        names.add(host.lower())
    else:
        if addr.version == 6:
            names |= {f"[{bare.lower()}]", f"[{addr.compressed}]", f"[{addr.exploded}]"}
        else:
            names.add(str(addr))
    return sorted(names)


class HostPolicy:
    """Which ``Host`` and ``Origin`` headers a server accepts (``names`` None: any)."""

    def __init__(self, names: Iterable[str] | None) -> None:
        self.names = None if names is None else frozenset(n.lower() for n in names)

    def host_ok(self, host: str | None) -> bool:
        if self.names is None:
            return True
        m = _HOSTPORT.match((host or "").lower())
        return m is not None and m.group(1) in self.names and \
            (m.group(2) is None or int(m.group(2)) <= 65535)

    def origin_ok(self, origin: str | None) -> bool:
        if self.names is None or origin is None:
            return True
        m = _ORIGIN.match(origin.lower())
        return m is not None and self.host_ok(m.group(1))


def policy_for(host: str, loopback: bool) -> HostPolicy:
    return HostPolicy(loopback_names(host) if loopback else None)


class HostGuard:
    """Answers 421 to a request whose Host the policy refuses and 403 to one whose Origin
    it refuses, before any endpoint (or the bearer token check) sees it."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.policy.names is not None:
            headers = [(k, v.decode("latin-1")) for k, v in scope.get("headers") or []]
            hosts = [v for k, v in headers if k == b"host"]
            origins = [v for k, v in headers if k == b"origin"]
            if len(hosts) != 1 or not self.policy.host_ok(hosts[0]):
                await send_error(send, 421, "misdirected",
                              "the Host header names no loopback address")
                return
            if len(origins) > 1 or (origins and not self.policy.origin_ok(origins[0])):
                await send_error(send, 403, "forbidden", "requests from this Origin are refused")
                return
        await self.app(scope, receive, send)

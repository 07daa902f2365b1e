"""``serve --forwarded-allow-ips``: behind a proxy on another host (Caddy in compose), the
proxy's ``X-Forwarded-Proto: https`` makes the request https, so the page's session cookie
is Secure; without it only 127.0.0.1 is trusted (issue 30 item 4)."""

from __future__ import annotations

from typing import Any

import anyio

from sediment.server.serving import http_server


def _scheme(allow: str | None) -> str:
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen["scheme"] = scope["scheme"]

    server = http_server(app, forwarded_allow_ips=allow)  # type: ignore[arg-type]
    server.config.load()
    scope = {"type": "http", "scheme": "http", "client": ("172.18.0.5", 40000),
             "headers": [(b"x-forwarded-proto", b"https"),
                         (b"x-forwarded-for", b"203.0.113.9")],
             "path": "/ui", "method": "GET"}

    async def nothing() -> dict[str, Any]:
        return {"type": "http.request"}

    async def ignore(message: Any) -> None:
        return None

    anyio.run(server.config.loaded_app, scope, nothing, ignore)
    return str(seen["scheme"])


def test_the_proxy_named_is_trusted_and_no_other() -> None:
    assert _scheme("*") == "https"
    assert _scheme("172.18.0.5") == "https"
    assert _scheme("127.0.0.1") == "http"

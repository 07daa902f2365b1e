"""Work a server does when it stops: flushing batched counters (memory use counts).

Hooks run at the HTTP app's lifespan shutdown (uvicorn re-raises SIGTERM after a graceful
shutdown, so ``atexit`` would not run) and at interpreter exit (stdio); each hook runs at
most once.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_hooks: list[Callable[[], object]] = []
_lock = threading.Lock()


def on_shutdown(fn: Callable[[], object]) -> None:
    with _lock:
        _hooks.append(fn)


def run_shutdown() -> None:
    with _lock:
        hooks = list(_hooks)
        _hooks.clear()
    for fn in hooks:
        with contextlib.suppress(Exception):
            fn()


atexit.register(run_shutdown)


class ShutdownHooks:
    """Runs the shutdown hooks when the ASGI server completes its lifespan shutdown."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def relay(message: Message) -> None:
            if message.get("type") == "lifespan.shutdown.complete":
                run_shutdown()
            await send(message)

        await self.app(scope, receive, relay)

"""A server's start and stop: its event loop built whole, and the work it does when it
stops (flushing batched counters: memory use counts).

Hooks run at the HTTP app's lifespan shutdown (uvicorn re-raises SIGTERM after a graceful
shutdown, so ``atexit`` would not run) and at interpreter exit (stdio); each hook runs at
most once.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any

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


def run_async(main: Callable[[], Coroutine[Any, Any, object]]) -> None:
    """Run ``main()`` on a new event loop built with Ctrl-C held back.

    A Ctrl-C landing inside the event loop's constructor (a loaded machine, the moment the
    server says where it listens) left a half-built loop whose finaliser printed a
    traceback after "Interrupted."; one held back here is raised once the loop is whole,
    where closing the runner cleans up, and the coroutine is closed if it never ran. Held
    in a Python handler rather than a signal mask, which would leave it to whichever other
    thread the kernel picks; only the main thread sees Ctrl-C, so a loop run in another
    thread holds nothing."""
    held: list[int] = []
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        previous = signal.signal(signal.SIGINT, lambda signum, _: held.append(signum))
    try:
        runner = asyncio.Runner()
        runner.get_loop()
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous)
    with runner:
        if held:
            raise KeyboardInterrupt
        coro = main()
        try:
            runner.run(coro)
        finally:
            coro.close()


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

"""Ctrl-C the moment the HTTP server starts: "Interrupted." and nothing else.

CI once saw a Ctrl-C land inside the event loop's constructor; the half-built loop's
finaliser then printed a traceback. The child below delivers SIGINT at that exact point,
from the stdlib hook the constructor calls before the loop is whole."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import asyncio.coroutines, gc, signal, socket
    from starlette.applications import Starlette
    from sediment.server.serving import http_server, run

    assert hasattr(asyncio.coroutines, "_is_debug_mode")
    real = asyncio.coroutines._is_debug_mode
    calls = []

    def interrupted_while_building():
        calls.append(1)
        signal.raise_signal(signal.SIGINT)
        return real()

    asyncio.coroutines._is_debug_mode = interrupted_while_building
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    try:
        run(http_server(Starlette()), sock)
    except KeyboardInterrupt:
        print("interrupted", len(calls) > 0)
    gc.collect()
""")


def test_ctrl_c_while_the_event_loop_is_built_prints_no_traceback() -> None:
    proc = subprocess.run([sys.executable, "-W", "default", "-c", CHILD], capture_output=True,
                          text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "interrupted True\n", "")

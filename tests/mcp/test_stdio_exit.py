"""The stdio server stops when its SDK loop returns, although the SDK keeps a copy of the
server's stdout open: the pump that forwards the SDK's output drains what is left and ends,
instead of waiting for an end of stream that never comes (every `sediment serve` over stdio
took some 13 s to exit after its input closed, so clients killed it after their 2 s)."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import os, threading
from sediment.server.stdio import run_stdio

kept = []

def serve():
    kept.append(os.dup(1))  # as the SDK does: a copy of its stdout, never closed
    os.write(1, b'{"jsonrpc":"2.0","id":1,"result":{}}\\n')
    os.write(1, b'{"jsonrpc":"2.0","id":2,"result":{}}')  # a last line with no newline

run_stdio(serve)
alive = [t.name for t in threading.enumerate() if t.name == "sediment-stdio-out"]
print("", "out pump alive:", alive, flush=True)
"""


def test_the_output_pump_drains_and_ends_when_the_server_returns() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == ['{"jsonrpc":"2.0","id":1,"result":{}}',
                     '{"jsonrpc":"2.0","id":2,"result":{}} out pump alive: []'], done.stdout

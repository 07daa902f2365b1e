"""A child process to kill -9 at a chosen point of a real ``sediment`` command.

``python -m tests.store.killpoint N before|after ARGS...`` runs ``sediment ARGS...`` in this
process, and at the N-th ``os.replace`` (the rename that commits a layer file) prints
``PAUSED`` and sleeps, before or after the rename, until the parent kills it. Nothing of
Sediment is replaced: the pause only holds the real command still at that point.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

PAUSED = "PAUSED"


def main() -> None:
    nth, when, *args = sys.argv[1:]
    calls = 0
    real_replace = os.replace

    def pause() -> None:
        sys.stdout.write(PAUSED + "\n")
        sys.stdout.flush()
        time.sleep(120)

    def replace(src: Any, dst: Any, **kw: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == int(nth) and when == "before":
            pause()
        real_replace(src, dst, **kw)
        if calls == int(nth) and when == "after":
            pause()

    os.replace = replace
    from sediment.cli import cli

    cli(args=args, prog_name="sediment")


if __name__ == "__main__":
    main()

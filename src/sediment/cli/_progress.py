"""Progress of long work on stderr: a bar with rate and ETA on a terminal, a plain line at
most every few seconds otherwise (a long compile piped to a log still shows it is alive),
nothing with --quiet or --json.

``SEDIMENT_PROGRESS_SECONDS`` sets the interval of the plain lines (default 5).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from sediment.cli._options import get_config
from sediment.cli._output import console, is_terminal, verbosity

Update = Callable[[str, int, int], None]
DEFAULT_INTERVAL = 5.0


def _interval() -> float:
    """``SEDIMENT_PROGRESS_SECONDS`` of the running command's configuration."""
    ctx = click.get_current_context(silent=True)
    seconds = get_config(ctx).env.progress_seconds if ctx is not None else None
    return DEFAULT_INTERVAL if seconds is None else max(seconds, 0.0)


def _eta(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class _Lines:
    """``stage done/total (pct, rate/s, ETA h:mm:ss)`` lines, throttled per interval."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.started: dict[str, tuple[float, int]] = {}
        self.last = time.monotonic()

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        t0, d0 = self.started.setdefault(stage, (now, done))
        if now - self.last < self.interval and not (self.interval == 0 and done):
            return
        self.last = now
        elapsed = now - t0
        rate = (done - d0) / elapsed if elapsed > 0 else 0.0
        pct = f"{100 * done / total:.0f}%" if total else "-"
        eta = _eta((total - done) / rate) if rate > 0 and total >= done else "-"
        click.echo(f"{stage} {done}/{total} ({pct}, {rate:.1f}/s, ETA {eta})", err=True)


@contextlib.contextmanager
def progress(*, enabled: bool = True) -> Iterator[Update | None]:
    """A callback ``(stage, done, total)`` for library functions, or None when silenced."""
    if not enabled or verbosity() < 0:
        yield None
        return
    if not is_terminal():
        yield _Lines(_interval())
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[rate]}"),
                  TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                  console=console(stderr=True), transient=True) as bar:
        tasks: dict[str, TaskID] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total, rate="")
            bar.update(tasks[stage], completed=done, total=total)
            speed = bar.tasks[tasks[stage]].speed
            bar.update(tasks[stage], rate=f"{speed:.1f}/s" if speed else "")

        yield update

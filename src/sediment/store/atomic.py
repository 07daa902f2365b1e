"""Crash-safe file replacement: a reader sees the old file or the new one, never a torn one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from sediment.errors import SedimentError


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes | bytearray | memoryview, *,
                 mode: int = 0o644) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it, rename it over ``path``,
    then fsync the directory so the rename itself is durable."""
    atomic_fill(path, lambda fd: _write_all(fd, data), mode=mode)


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data).cast("B")
    while len(view):
        view = view[os.write(fd, view):]


def atomic_fill(path: Path, fill: Callable[[int], object], *, mode: int = 0o644) -> None:
    """:func:`atomic_write` of whatever ``fill`` writes into the temporary file's
    descriptor (at any offsets: it is a new, empty regular file)."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise SedimentError(f"{path}: cannot create a temporary file in {directory}: "
                            f"{exc.strerror}") from exc
    try:
        try:
            fill(fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        fsync_dir(directory)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise SedimentError(f"{path}: write failed: {exc.strerror or exc}") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise

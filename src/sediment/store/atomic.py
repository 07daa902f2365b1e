"""Crash-safe file replacement: a reader sees the old file or the new one, never a torn one.

The temporary file is named ``.<name>.<pid>.<random>.tmp`` beside the target, so a writer
killed before its rename leaves a file that ``remove_stale_temporaries`` recognises: the
target's name and a writer process that no longer exists.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
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
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                                   dir=directory)
    except OSError as exc:
        raise SedimentError(f"{path}: cannot create a temporary file in {directory}: "
                            f"{exc.strerror}") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
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


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Delete temporaries of ``path`` left by writers that died before their rename.

    Call it only while holding ``path``'s writer lock: then no live writer of ``path`` is
    between its temporary and its rename, and the process check guards against writers that
    do not lock. Names from before the pid was recorded are stale under the lock as well.
    """
    directory = path.parent if str(path.parent) else Path(".")
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(?:(\d+)\.)?[a-z0-9_]{{8}}\.tmp")
    removed: list[Path] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or (m.group(1) is not None and _alive(int(m.group(1)))):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(directory / name)
            removed.append(directory / name)
    return removed

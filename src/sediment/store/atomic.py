"""Crash-safe file replacement: a reader sees the old file or the new one, never a torn one.

Atomic replacement (a temporary file beside the target, renamed over it) applies to regular
files only. Renaming over a character device, a FIFO or ``/dev/stdout`` would replace the
device node with a regular file, so :func:`write_output`, which commands that write a path
the user names use, writes such targets in place, and :func:`atomic_write` (layer, index and
manifest files, which must be regular) refuses them. ``-`` is standard output.

The temporary file is named ``.<name>.<pid>.<random>.tmp`` beside the target, so a writer
killed before its rename leaves a file that ``remove_stale_temporaries`` recognises: the
target's name and a writer process that no longer exists.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from sediment.errors import SedimentError, ValidationError

STDOUT = "-"


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def is_regular_target(path: Path) -> bool:
    """True when ``path`` is a regular file (through symlinks) or does not exist yet."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _regular_path(path: Path) -> Path:
    """The path to replace: a symlink's target (the link stays a link); refuses anything
    that is not a regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise SedimentError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise SedimentError(f"{path} is {_kind(st.st_mode)}; only a regular file can be "
                            "written here (it is replaced atomically)")
    return Path(os.path.realpath(path)) if os.path.islink(path) else path


def rewrite_text(path: Path, change: Callable[[str], str]) -> tuple[str, bool]:
    """Apply ``change`` to a UTF-8 text file (empty when absent) and write the result
    atomically when it differs; the new text and whether it was written. Used for the
    small project files ``sediment init`` keeps (``.gitignore``, ``.gitattributes``)."""
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"{path}: cannot read it: {exc}") from exc
    after = change(before)
    if after != before:
        atomic_write(path, after.encode("utf-8"))
    return after, after != before


def atomic_write(path: Path, data: bytes | bytearray | memoryview, *,
                 mode: int = 0o644) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it, rename it over ``path``,
    then fsync the directory so the rename itself is durable. ``path`` must be a regular
    file or absent; through a symlink, the link's target is replaced."""
    atomic_fill(path, lambda fd: _write_all(fd, data), mode=mode)


def atomic_fill(path: Path, fill: Callable[[int], object], *, mode: int = 0o644) -> None:
    """:func:`atomic_write` of whatever ``fill`` writes into the temporary file's
    descriptor (at any offsets: it is a new, empty regular file)."""
    path = _regular_path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                                   dir=directory)
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
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise SedimentError(f"{path}: write failed: {exc.strerror or exc}") from exc
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


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view):]


def _write_in_place(path: Path, data: bytes | bytearray | memoryview) -> None:
    """Write to a character device or FIFO as it is: no temporary file, no rename. A FIFO
    nobody reads is an error rather than a wait."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise SedimentError(f"{path} is a FIFO that no process is reading") from exc
        raise SedimentError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        _write_all(fd, data)
    except OSError as exc:
        raise SedimentError(f"{path}: write failed: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def write_output(path: Path | str, data: bytes | bytearray | memoryview, *,
                 mode: int = 0o644) -> None:
    """Write a file the user named: ``-`` is standard output, a character device or FIFO
    (``/dev/null``, ``/dev/stdout`` on a terminal or pipe) is written in place, a regular
    file (or a new one) is replaced atomically; a directory, block device or socket is
    refused."""
    if str(path) == STDOUT:
        sys.stdout.flush()
        try:
            _write_all(sys.stdout.fileno(), data)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise BrokenPipeError(exc.errno, exc.strerror) from exc
            raise SedimentError(f"standard output: write failed: {exc.strerror}") from exc
        return
    target = Path(path)
    try:
        st = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as exc:
        raise SedimentError(f"{target}: cannot write: {exc.strerror or exc}") from exc
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        _write_in_place(target, data)
        return
    atomic_write(target, data, mode=mode)

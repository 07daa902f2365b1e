"""Keeping a mapped layer file readable when someone rewrites it in place (Linux).

Sediment replaces layer files by renaming a new file over them, which leaves every mapping
of the old file intact. ``cp backup.db AGENTS.db`` instead truncates the same file and
writes into it: a page of a mapping past the new end of file then raises SIGBUS in
whichever thread touches it (a search scanning the matrix), and the process dies. Nothing
can catch that in Python, so the file must not be truncated while it is mapped.

With :func:`enable` (``sediment serve`` and ``sediment ui`` call it), each map is opened
with a read lease (``F_SETLEASE``, ``F_RDLCK``): the kernel makes any process that opens
the file for writing or truncates it wait (up to ``/proc/sys/fs/lease-break-time``, 45 s by
default) until the lease is released. A watcher thread notices the pending break
(``F_GETLEASE`` no longer reads ``F_RDLCK``), copies the mapped bytes into anonymous memory
and moves that copy over the mapping at the same address (``mremap``), so every view
into it keeps reading the same snapshot, then releases the lease. The writer proceeds; the
next read sees the file changed (its stamp) and opens it again. The lease's signal is
``SIGURG``, whose default is to be ignored, so no handler is needed in any thread.

A file that is already open for writing elsewhere cannot be leased: opening it then is a
clean :class:`~sediment.errors.FormatError` (try again once the copy finishes). Where
leases are unavailable (another OS, a file owned by another user, NFS) maps are opened as
before, unprotected.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import itertools
import mmap
import os
import signal
import stat
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from sediment.errors import FormatError

__all__ = ["POLL_SECONDS", "enable", "enabled", "guarded_map", "protected_count"]

POLL_SECONDS = 0.1
_F_SETSIG = 10
_F_SETLEASE = 1024
_F_GETLEASE = 1025
_PROT_READ, _PROT_WRITE = 1, 2
_MAP_PRIVATE, _MAP_ANONYMOUS = 0x02, 0x20
_MREMAP_MAYMOVE, _MREMAP_FIXED = 1, 2
_MAP_FAILED = ctypes.c_void_p(-1).value


@dataclass
class _Lease:
    fd: int
    mm: weakref.ref[mmap.mmap]
    addr: int
    size: int


_lock = threading.Lock()
_leases: dict[int, _Lease] = {}
_keys = itertools.count()
_state = {"enabled": False, "watcher": False}
_libc: Any = None


def _load_libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mremap.restype = ctypes.c_void_p
    libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
                            ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.munmap.restype = ctypes.c_int
    return libc


def enable() -> bool:
    """Protect the maps opened from now on (a long-running server); False where the OS
    has no leases."""
    global _libc
    if not sys.platform.startswith("linux"):
        return False
    with _lock:
        if _libc is None:
            _libc = _load_libc()
        _state["enabled"] = True
    return True


def enabled() -> bool:
    return _state["enabled"]


def protected_count() -> int:
    """Maps holding a lease now (tests)."""
    with _lock:
        return len(_leases)


def guarded_map(path: str) -> mmap.mmap:
    """A read-only map of ``path``, leased when protection is enabled (module doc)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    leased = False
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if _state["enabled"] and stat.S_ISREG(st.st_mode):
            leased = _lease(fd, path)
        if os.fstat(fd).st_size == 0:
            raise FormatError("file is empty (0 bytes), not an AGENTS.db layer",
                              rule="8.4.3", field="header", offset=0, path=path)
        mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except BaseException:
        os.close(fd)
        raise
    if not leased:
        os.close(fd)
        return mm
    lease = _Lease(fd, weakref.ref(mm), int(np.frombuffer(mm, dtype=np.uint8).ctypes.data),
                   len(mm))
    key = next(_keys)
    with _lock:
        _leases[key] = lease
        start = not _state["watcher"]
        _state["watcher"] = True
    if start:
        threading.Thread(target=_watch, name="sediment-map-leases", daemon=True).start()
    weakref.finalize(mm, _release, key)
    return mm


def _lease(fd: int, path: str) -> bool:
    try:
        fcntl.fcntl(fd, _F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_RDLCK)
    except OSError as exc:
        if exc.errno == errno.EAGAIN:
            raise FormatError("the file is open for writing by another process (being "
                              "copied over in place?); try again when that finishes",
                              rule="8.4.3", field="header", offset=0, path=path) from None
        return False
    return True


def _release(key: int) -> None:
    """The map is gone: drop its lease."""
    with _lock:
        lease = _leases.pop(key, None)
    if lease is not None:
        _unlease(lease.fd)


def _unlease(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_UNLCK)
    with contextlib.suppress(OSError):
        os.close(fd)


def _watch() -> None:
    stop = threading.Event()
    while not stop.wait(POLL_SECONDS):
        with _lock:
            leases = list(_leases.items())
        for key, lease in leases:
            try:
                pending = fcntl.fcntl(lease.fd, _F_GETLEASE) != fcntl.F_RDLCK
            except OSError:
                pending = True
            if pending:
                _detach(key, lease)


def _detach(key: int, lease: _Lease) -> None:
    """Move a private copy of the mapped bytes over the mapping, then let the writer go."""
    with _lock:
        if _leases.get(key) is not lease:
            return
        mm = lease.mm()
        try:
            if mm is not None and not mm.closed:
                _snapshot(lease.addr, lease.size)
        finally:
            del _leases[key]
            _unlease(lease.fd)


def _snapshot(addr: int, size: int) -> None:
    anon = _libc.mmap(None, size, _PROT_READ | _PROT_WRITE, _MAP_PRIVATE | _MAP_ANONYMOUS,
                      -1, 0)
    if anon in (None, _MAP_FAILED):
        return
    ctypes.memmove(anon, addr, size)
    moved = _libc.mremap(anon, size, size, _MREMAP_MAYMOVE | _MREMAP_FIXED, addr)
    if moved != addr:
        _libc.munmap(anon, size)

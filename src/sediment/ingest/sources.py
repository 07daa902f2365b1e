"""Read one source file as text, or say precisely why it cannot be used.

A compile must not stop at the first odd file in a tree, nor embed garbage: each file is
either decoded text or a ``Skipped`` whose reason names the problem and where it is.

- unreadable: the OS error (``unreadable: Permission denied``);
- too large: over ``max_bytes`` (default 10 MiB), checked before reading;
- binary: a NUL byte in the first 8 KiB, or a UTF-16/UTF-32 byte order mark;
- not UTF-8: the byte offset (and line) of the first invalid byte.

A UTF-8 BOM is dropped and CRLF / CR become LF, so line numbers in provenance count
LF-separated lines (see ``sediment.ingest.text``). Opening never blocks on a FIFO.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePath

from sediment.errors import ValidationError
from sediment.ingest.model import Skipped, SourceText
from sediment.ingest.text import normalize_text

__all__ = ["BINARY_SNIFF_BYTES", "DEFAULT_MAX_BYTES", "Skipped", "SourceText", "read_text_file"]

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192

_UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"),
)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


class _Unusable(Exception):
    """Why a file cannot be used; becomes a ``Skipped``."""


def read_text_file(
    root: Path, rel: PurePath | str, *, max_bytes: int = DEFAULT_MAX_BYTES,
) -> SourceText | Skipped:
    """Decode ``root / rel``; ``rel`` must be relative and stay inside ``root``."""
    if max_bytes < 0:
        raise ValidationError(f"max_bytes must be >= 0, got {max_bytes}")
    rel_path = PurePath(rel)
    name = rel_path.as_posix()
    if rel_path.is_absolute() or ".." in rel_path.parts:
        raise ValidationError(f"source path {name!r} must be relative to the root")
    try:
        data = _read_bytes(root / rel_path, max_bytes)
        _check_not_binary(data)
        return SourceText(name, normalize_text(_decode(data)))
    except _Unusable as exc:
        return Skipped(name, str(exc))


def _read_bytes(path: Path, max_bytes: int) -> bytes:
    try:
        fd = os.open(path, _OPEN_FLAGS)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise _Unusable("not a regular file")
            if info.st_size > max_bytes:
                raise _Unusable(_too_large(info.st_size, max_bytes))
            with open(fd, "rb", closefd=False) as fh:
                data = fh.read(max_bytes + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _Unusable(f"unreadable: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise _Unusable(_too_large(len(data), max_bytes) + " (it grew while being read)")
    return data


def _too_large(size: int, max_bytes: int) -> str:
    return f"too large: {size:,} bytes is over the limit of {max_bytes:,} bytes"


def _check_not_binary(data: bytes) -> None:
    for bom, encoding in _WIDE_BOMS:
        if data.startswith(bom):
            raise _Unusable(f"binary: starts with a {encoding} byte order mark; only UTF-8 is read")
    nul = data.find(b"\0", 0, BINARY_SNIFF_BYTES)
    if nul >= 0:
        raise _Unusable(f"binary: NUL byte at offset {nul}")


def _decode(data: bytes) -> str:
    """UTF-8 text without its BOM; offsets in errors count from the file's first byte."""
    skip = len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = skip + exc.start
        line = data.count(b"\n", 0, offset) + 1
        raise _Unusable(
            f"not UTF-8: invalid byte 0x{data[offset]:02x} at offset {offset} (line {line})"
        ) from None

"""What an import writes: one :class:`Item` per memory, and the rules every reader shares.

A reader turns a file format into items; :mod:`sediment.interop.importer` saves them
through the memory service. An item's ``origin`` is the format's own view of it (the
entity it belongs to, the line as written, the fields the memory model has no place for),
stored in the memory's save event so an export can write the same file back.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sediment.errors import ValidationError
from sediment.memory import CATEGORIES

MAX_FILE_BYTES = 8 * 1024 * 1024
"""Largest Markdown file a reader takes whole (notes and instruction files are small)."""
MAX_LINE_BYTES = 1024 * 1024
"""Longest JSON line or JSON value a streamed reader holds at once."""
CONTEXT_RE = re.compile(r"^[^\x00-\x1f\x7f]{1,100}$")


class FormatError(ValidationError):
    """Input that cannot be read, named by ``path:line``."""


def fail(where: str, message: str) -> FormatError:
    return FormatError(f"{where}: {message}")


@dataclass(frozen=True, slots=True)
class Item:
    """One memory to save, with where it came from and what it refers to."""

    content: str
    category: str
    source: str
    """``path:line`` of the text in its file: the memory's provenance."""
    origin: dict[str, Any]
    context: str | None = None
    key: str | None = None
    """A name other items refer to (an entity), resolved to the memory's chunk id."""
    refs: tuple[str, ...] = ()
    actor: str | None = None
    """Whose memory it is, when the format says (mem0's ``user_id``)."""
    learned: str = "explicit"
    """How it was learned (``explicit`` for what people wrote, ``inferred`` for what a
    tool extracted)."""
    bare: str | None = None
    """The same fact without its subject prefix: a memory with this text is the same one
    (an export of a memory saved here, imported back)."""


@dataclass(slots=True)
class Reading:
    """What a reader saw besides items: files it did not follow (includes outside the
    root, cycles), for the report."""

    notes: list[str] = field(default_factory=list)


def category_of(value: object, default: str = "fact") -> str:
    """A format's own category as one of Sediment's, else ``default`` (the original is
    kept in the origin)."""
    if isinstance(value, str):
        v = value.strip().lower()
        for c in CATEGORIES:
            if v in (c, c + "s"):
                return c
    return default


def context_name(value: str | None) -> str | None:
    """``value`` as a memory context name when it can be one (1-100 printable
    characters), else None."""
    if value is None:
        return None
    v = value.strip()
    return v if CONTEXT_RE.match(v) else None


def shown_path(path: Path, root: Path) -> str:
    """The path a source names: relative to ``root`` (POSIX), else as given."""
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return path.as_posix()
    return rel.as_posix() or path.name


def read_text(path: Path, where: str) -> str:
    """A whole text file of at most ``MAX_FILE_BYTES``, as UTF-8; errors name the line."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise fail(where, f"{size} bytes; the most a file may hold here is "
                              f"{MAX_FILE_BYTES}")
        data = path.read_bytes()
    except OSError as exc:
        raise fail(where, f"cannot read: {exc.strerror or exc}") from None
    return decode(data, where)


def decode(data: bytes, where: str, first_line: int = 1) -> str:
    try:
        return data.decode("utf-8-sig" if first_line == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data[:exc.start].count(b"\n")
        raise fail(f"{where}:{line}", "not UTF-8 text") from None


def walk(root: Path, keep: Any, *, hidden: tuple[str, ...] = ()) -> Iterator[Path]:
    """Files under ``root`` for which ``keep(relative_posix_path)`` holds, in sorted
    order; hidden directories are skipped unless named in ``hidden``, and so are
    ``node_modules`` and symbolic links to directories."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if (not d.startswith(".") or d in hidden)
                             and d != "node_modules"
                             and not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            full = Path(dirpath, name)
            rel = full.relative_to(root).as_posix()
            if keep(rel) and full.is_file():
                yield full

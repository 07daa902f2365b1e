"""Chunk ids and ``path:line`` references that arrive as text, parsed strictly.

A chunk id is a u32 other than 0 (RFC 7.1; 8.4.2: 0 means "unset"). Ids reach Sediment as
text from command-line options, MCP arguments and resource URIs, and ``int()`` is too lenient
for them: it accepts ``'٣'``, ``' 12'``, ``'+12'`` and ``'1_000'``, and raises ValueError
past 4,300 digits. Every adapter parses them here instead: ASCII digits only (leading zeros
allowed), no sign, no whitespace, from 1 to 4,294,967,295; anything else is a
ValidationError that names the value (shortened when long) and the rule.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from sediment.errors import ValidationError

__all__ = ["CHUNK_ID_MAX", "SourceRef", "check_chunk_id", "parse_chunk_id",
           "parse_source_ref"]

CHUNK_ID_MAX = 2**32 - 1
_SHOWN = 40
_DIGITS = frozenset("0123456789")
_SOURCE_REF = re.compile(
    r"(?P<path>[^\x00\n]+):(?P<line>[1-9][0-9]{0,8})(?:-(?P<end>[1-9][0-9]{0,8}))?")


def _shown(text: str) -> str:
    """``text`` quoted for a message, control characters escaped, cut when long."""
    if len(text) <= _SHOWN:
        return repr(text)
    return f"{text[:_SHOWN // 2]!r}... ({len(text):,} characters)"


def _subject(text: str, what: str) -> str:
    return f"{what} {_shown(text)}" if what else _shown(text)


def parse_chunk_id(text: str, *, what: str = "") -> int:
    """The chunk id written in ``text``; ``what`` names where it came from in errors."""
    if not isinstance(text, str):
        raise ValidationError(f"{what or 'chunk id'} must be text, got {type(text).__name__}")
    if not text or not _DIGITS.issuperset(text):
        raise ValidationError(f"{_subject(text, what)} is not a chunk id: use the ASCII "
                              f"digits 0-9 only (no sign, no spaces), from 1 to {CHUNK_ID_MAX}")
    significant = text.lstrip("0")
    if not significant or len(significant) > 10 or int(significant) > CHUNK_ID_MAX:
        raise ValidationError(f"{_subject(text, what)} is not a chunk id: ids run from 1 to "
                              f"{CHUNK_ID_MAX} (0 means unset)")
    return int(significant)


def check_chunk_id(value: int, *, what: str = "chunk id") -> int:
    """``value`` when it is a chunk id given as a number (JSON), else a ValidationError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{what} must be an integer chunk id, got {type(value).__name__}")
    if not 0 < value <= CHUNK_ID_MAX:
        text = str(value) if -10**40 < value < 10**40 else "(a number of more than 40 digits)"
        raise ValidationError(f"{what} {text} is not a chunk id: ids run from 1 to "
                              f"{CHUNK_ID_MAX} (0 means unset)")
    return value


class SourceRef(NamedTuple):
    """A ``path:line`` or ``path:line-end`` provenance reference (RFC 7.2)."""

    path: str
    line: int
    end: int | None


def parse_source_ref(text: str) -> SourceRef | None:
    """The parts of a ``path:line[-end]`` reference, or None when ``text`` is not one.

    Line numbers are ASCII digits from 1 to 999,999,999; the whole text must match (a
    trailing newline is not part of a reference).
    """
    m = _SOURCE_REF.fullmatch(text)
    if m is None:
        return None
    end = m["end"]
    return SourceRef(m["path"], int(m["line"]), int(end) if end is not None else None)

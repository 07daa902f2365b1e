"""YAML front matter at the top of a Markdown file, read without a YAML library.

Front matter is a ``---`` line 1, a closing ``---`` (or ``...``) line, and between them at
least one top-level ``key: value`` line and nothing but YAML-looking lines (``key: value``,
``# comments``, ``- items``, indented lines, blank lines). Anything else means the block is
Markdown (a thematic break, text, a thematic break), so prose is never swallowed.

Only flat ``key: value`` lines are read: that is all chunking needs (``kind``), and a full
YAML parser would be a dependency for one field. Values lose surrounding quotes and, when
unquoted, a trailing `` # comment``; nested, list and multi-line values are ignored; a
repeated key keeps its last value, as in PyYAML.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FrontMatter", "front_matter_problem", "parse_front_matter"]

_OPEN = re.compile(r"---[ \t]*")
_CLOSE = re.compile(r"(?:---|\.\.\.)[ \t]*")
_FIELD = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.-]*)[ \t]*:(?:[ \t]+(.*?))?[ \t]*")
_YAMLISH = re.compile(r"[ \t]*(?:#.*)?|[ \t]+\S.*|-(?:[ \t].*)?|[\"'][^\"']*[\"'][ \t]*:.*")
_COMMENT = re.compile(r"[ \t]+#.*")


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """Fields read, the 1-based line of each, and the index of the first body line."""

    fields: dict[str, str]
    lines: dict[str, int]
    body_start: int


def parse_front_matter(lines: Sequence[str]) -> FrontMatter | None:
    """The front matter opening ``lines``, or ``None`` if the file has none."""
    found = _read(lines)
    return found if isinstance(found, FrontMatter) else None


def front_matter_problem(lines: Sequence[str]) -> str | None:
    """Why a block that starts like front matter (``---`` then ``key:``) was not taken as it.

    The message names the 1-based line at fault, ``line: message``.
    """
    found = _read(lines)
    if isinstance(found, FrontMatter) or found is None:
        return None
    if len(lines) > 1 and _FIELD.fullmatch(lines[1]):
        return found
    return None


def _read(lines: Sequence[str]) -> FrontMatter | str | None:
    if not lines or not _OPEN.fullmatch(lines[0]):
        return None
    fields: dict[str, str] = {}
    where: dict[str, int] = {}
    for index in range(1, len(lines)):
        line = lines[index]
        if _CLOSE.fullmatch(line):
            if not fields:
                return None
            return FrontMatter(fields, where, index + 1)
        if match := _FIELD.fullmatch(line):
            fields[match[1]] = _value(match[2] or "")
            where[match[1]] = index + 1
        elif not _YAMLISH.fullmatch(line):
            return f"{index + 1}: front matter has a line that is not YAML; it is read as Markdown"
    return "1: front matter is never closed; it is read as Markdown"


def _value(raw: str) -> str:
    if raw[:1] in ("'", '"'):
        end = raw.find(raw[0], 1)
        if end > 0:
            return raw[1:end]
    return _COMMENT.sub("", raw).strip()

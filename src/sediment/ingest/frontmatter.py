"""YAML front matter at the top of a Markdown file, read without a YAML library.

Front matter is a ``---`` line 1, a closing ``---`` (or ``...``) line, and lines between.
Only flat ``key: value`` lines are read: that is all chunking needs (``kind``), and a full
YAML parser would be a dependency for one field. Values lose matching surrounding quotes
and, when unquoted, a trailing `` # comment``; nested, list and multi-line values are
ignored; a repeated key keeps its last value, as in PyYAML. Without a closing line there is
no front matter: the ``---`` is Markdown (a thematic break).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FrontMatter", "looks_unclosed", "parse_front_matter"]

_OPEN = re.compile(r"---[ \t]*")
_CLOSE = re.compile(r"(?:---|\.\.\.)[ \t]*")
_FIELD = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.-]*)[ \t]*:(?:[ \t]+(.*?))?[ \t]*")
_COMMENT = re.compile(r"[ \t]+#.*")


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """Fields read, the 1-based line of each, and the index of the first body line."""

    fields: dict[str, str]
    lines: dict[str, int]
    body_start: int


def parse_front_matter(lines: Sequence[str]) -> FrontMatter | None:
    """The front matter opening ``lines``, or ``None`` if the file has none."""
    if not lines or not _OPEN.fullmatch(lines[0]):
        return None
    fields: dict[str, str] = {}
    where: dict[str, int] = {}
    for index in range(1, len(lines)):
        line = lines[index]
        if _CLOSE.fullmatch(line):
            return FrontMatter(fields, where, index + 1)
        match = _FIELD.fullmatch(line)
        if match:
            fields[match[1]] = _value(match[2] or "")
            where[match[1]] = index + 1
    return None


def looks_unclosed(lines: Sequence[str]) -> bool:
    """Whether line 1 seems to open front matter that never closes (worth a warning)."""
    return (len(lines) > 1 and bool(_OPEN.fullmatch(lines[0])) and bool(_FIELD.fullmatch(lines[1]))
            and parse_front_matter(lines) is None)


def _value(raw: str) -> str:
    if raw[:1] in ("'", '"'):
        end = raw.find(raw[0], 1)
        if end > 0:
            return raw[1:end]
    return _COMMENT.sub("", raw).strip()

"""The Markdown structure chunking needs: headings and fenced code blocks.

A line scanner following CommonMark where it matters for splitting, not a full parser:

- ATX headings: 1-6 ``#`` after at most 3 spaces, then a space or the end of the line; a
  closing run of ``#`` is dropped from the title.
- Setext headings: a paragraph followed by ``===`` (level 1) or ``---`` (level 2); the
  heading spans the whole paragraph. ``---`` after a blank line, a heading, a list item or
  a block quote is a thematic break, not a heading.
- Fences: 3 or more backticks or tildes after at most 3 spaces; closed by a line of the
  same character at least as long; an unclosed fence runs to the end of the file. Nothing
  inside a fence, an HTML comment or an indented code block is read as a heading.

Known simplifications: headings inside list items or block quotes are not headings here,
and HTML blocks other than comments are read as text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from sediment.ingest.text import is_blank

__all__ = ["Fence", "Heading", "Outline", "scan"]

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?")
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_THEMATIC = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})")
_CONTAINER = re.compile(r" {0,3}(?:>|(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$))")
_COMMENT_OPEN = re.compile(r" {0,3}<!--")


@dataclass(frozen=True, slots=True)
class Heading:
    """Lines ``start`` to ``end`` (exclusive, 0-based) form a heading of ``level``."""

    start: int
    end: int
    level: int
    title: str


@dataclass(frozen=True, slots=True)
class Fence:
    """Lines ``start`` to ``end`` (exclusive, 0-based), fence lines included."""

    start: int
    end: int
    closed: bool


@dataclass(frozen=True, slots=True)
class Outline:
    """What the scan found, with lookups the packer needs: fence end by start, heading lines."""

    headings: list[Heading]
    fences: list[Fence]
    fence_end: dict[int, int] = field(default_factory=dict)
    heading_lines: frozenset[int] = frozenset()


def scan(lines: Sequence[str], start: int = 0) -> Outline:
    """Headings and fences of ``lines[start:]``, with line indexes into ``lines``."""
    headings: list[Heading] = []
    fences: list[Fence] = []
    paragraph: int | None = None
    in_container = False
    i = start
    while i < len(lines):
        line = lines[i]
        step, ends_paragraph = i + 1, True
        if marker := _fence_marker(line):
            fences.append(_fence(lines, i, marker))
            step = fences[-1].end
        elif is_blank(line):
            pass
        elif _COMMENT_OPEN.match(line):
            step = _comment_end(lines, i)
        elif atx := _ATX.fullmatch(line):
            headings.append(Heading(i, i + 1, len(atx[1]), _atx_title(atx[2] or "")))
        elif paragraph is not None and (under := _SETEXT.fullmatch(line)):
            title = " ".join(part.strip() for part in lines[paragraph:i])
            headings.append(Heading(paragraph, i + 1, 1 if under[1][0] == "=" else 2, title))
        elif _THEMATIC.fullmatch(line):
            pass
        elif _CONTAINER.match(line):
            ends_paragraph, paragraph, in_container = False, None, True
        else:
            ends_paragraph = False
            if paragraph is None and not in_container and _indent(line) < 4:
                paragraph = i
        if ends_paragraph:
            paragraph, in_container = None, False
        i = step
    return Outline(
        headings, fences,
        fence_end={f.start: f.end for f in fences},
        heading_lines=frozenset(n for h in headings for n in range(h.start, h.end)),
    )


def _fence_marker(line: str) -> str | None:
    """The opening run of a fence, or ``None``; backtick info strings cannot hold a backtick."""
    opened = _FENCE_OPEN.fullmatch(line)
    if not opened or (opened[1][0] == "`" and "`" in opened[2]):
        return None
    return opened[1]


def _fence(lines: Sequence[str], start: int, marker: str) -> Fence:
    for j in range(start + 1, len(lines)):
        close = _FENCE_CLOSE.fullmatch(lines[j])
        if close and close[1][0] == marker[0] and len(close[1]) >= len(marker):
            return Fence(start, j + 1, closed=True)
    return Fence(start, len(lines), closed=False)


def _comment_end(lines: Sequence[str], start: int) -> int:
    first = lines[start]
    if "-->" in first[first.index("<!--") + 4:]:
        return start + 1
    for j in range(start + 1, len(lines)):
        if "-->" in lines[j]:
            return j + 1
    return len(lines)


def _atx_title(raw: str) -> str:
    return _ATX_CLOSE.sub("", raw).strip()


def _indent(line: str) -> int:
    width = 0
    for char in line:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
    return width

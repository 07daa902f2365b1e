"""Markdown cut into the pieces an instruction file is made of: list items (with what is
nested under them), paragraphs and fenced code, each with its line and the headings above
it. Headings are structure, not content: an export writes them back from the blocks'
``headings``.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+.*|[ \t]*)")
_ITEM = re.compile(r" {0,3}(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]+|$)")
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Block:
    line: int
    """1-based line of its first line in the file."""
    text: str
    """As written, lines joined with newlines (no trailing blank lines)."""
    headings: tuple[str, ...]
    item: bool
    """A list item (its marker is not part of the memory)."""

    @property
    def content(self) -> str:
        """The memory's text: a list item without its marker."""
        if not self.item:
            return self.text
        first, _, rest = self.text.partition("\n")
        body = _ITEM.sub("", first, count=1)
        return f"{body}\n{textwrap.dedent(rest)}" if rest else body


def blocks(lines: list[str], start: int = 0) -> list[Block]:
    """The blocks of ``lines[start:]`` (lines without their newlines)."""
    out: list[Block] = []
    heads: list[str] = []
    cur: list[str] = []
    first = 0
    item = False
    blank = False
    fence: str | None = None

    def flush() -> None:
        nonlocal cur, item, blank
        while cur and not cur[-1].strip():
            cur.pop()
        if cur:
            out.append(Block(first, "\n".join(cur), tuple(heads), item))
        cur, item, blank = [], False, False

    def begin(line: str, no: int, is_item: bool) -> None:
        nonlocal first, item
        flush()
        cur.append(line)
        first, item = no, is_item

    for index in range(start, len(lines)):
        line = lines[index].rstrip("\r")
        no = index + 1
        indent = len(line) - len(line.lstrip(" \t"))
        if fence is not None:
            cur.append(line)
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
                if not item:
                    flush()
            continue
        if not line.strip():
            if item:
                blank = True
                cur.append(line)
            else:
                flush()
            continue
        if m := _FENCE.match(line):
            if item and indent >= 2:
                cur.append(line)
            else:
                begin(line, no, False)
            fence = m.group(1)
            continue
        if h := _HEADING.fullmatch(line):
            flush()
            level = len(h.group(1))
            heads[:] = [x for x in heads if len(x) - len(x.lstrip("#")) < level]
            heads.append(line.strip())
            continue
        if _ITEM.match(line):
            begin(line, no, True)
            if m := _FENCE.match(_ITEM.sub("", line, count=1)):
                fence = m.group(1)
            continue
        if item and (indent >= 2 or not blank):
            cur.append(line)
            blank = False
            continue
        if cur and not item:
            cur.append(line)
            continue
        begin(line, no, False)
    flush()
    return out


def render(blocks_: list[tuple[tuple[str, ...], str]]) -> str:
    """Markdown for blocks given as (headings, text): a heading is written where the
    headings above a block differ from those above the one before it."""
    parts: list[str] = []
    above: tuple[str, ...] = ()
    listed = False
    for heads, text in blocks_:
        common = 0
        while common < min(len(heads), len(above)) and heads[common] == above[common]:
            common += 1
        changed = len(heads) != len(above) or common != len(heads)
        if changed:
            parts.extend(heads[common:] or heads[-1:])  # back up to a shallower heading
        above = heads
        item = bool(_ITEM.match(text))
        if item and listed and not changed:
            parts[-1] += "\n" + text
        else:
            parts.append(text)
        listed = item
    return "\n\n".join(parts) + "\n" if parts else ""

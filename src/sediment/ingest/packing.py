"""Cut a run of lines into chunks of at most ``max_chars`` characters.

Size is ``len(content)``: the chunk's lines joined by ``\\n``, leading and trailing blank
lines removed. In order of preference a run is cut:

1. at blank lines between paragraphs (never inside a fence), packing whole paragraphs
   greedily; a paragraph made only of heading lines is glued to the one after it, so a
   heading is not left alone at the end of a chunk;
2. inside a paragraph too large for one chunk, at line boundaries, packing greedily;
3. inside a line longer than ``max_chars``, every ``max_chars`` characters; the last piece
   may share a chunk with the lines after it.

A fenced code block is never cut. One longer than ``max_chars`` becomes a chunk of its own:
the only chunks allowed over the limit. Whitespace-only chunks are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sediment.ingest.text import is_blank

__all__ = ["Piece", "pack_lines"]

Piece = tuple[int, str]
"""A 0-based line index and text: a whole line, or a piece of a line cut for length."""


@dataclass(frozen=True, slots=True)
class _Atom:
    """Lines that move together: one line, or a whole fence; ``gap`` is blank lines before."""

    gap: tuple[Piece, ...]
    pieces: tuple[Piece, ...]
    fence: bool


def pack_lines(
    lines: Sequence[str],
    start: int,
    end: int,
    max_chars: int,
    *,
    fence_end: Mapping[int, int],
    heading_lines: frozenset[int] = frozenset(),
) -> list[list[Piece]]:
    """Chunks of ``lines[start:end]``; ``fence_end`` maps a fence's first line to its end."""
    packer = _Packer(max_chars)
    whole = [(n, lines[n]) for n in range(start, end)]
    if _length(whole) <= max_chars:
        packer.emit(whole)
        return packer.done
    for paragraph in _glue_headings(_paragraphs(lines, start, end, fence_end), heading_lines):
        pieces = _flatten(paragraph)
        if _length(pieces) <= max_chars:
            packer.add(pieces, paragraph[0].gap)
            continue
        packer.flush()
        for atom in paragraph:
            packer.add_atom(atom)
    packer.flush()
    return packer.done


class _Packer:
    """Greedy accumulator: the chunk being filled, its size, and the chunks done."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.done: list[list[Piece]] = []
        self.current: list[Piece] = []
        self.size = 0

    def add(self, pieces: Sequence[Piece], gap: Sequence[Piece] = ()) -> None:
        """Append ``pieces`` after ``gap``, first closing the current chunk if they won't fit."""
        if self.current:
            grown = self.size + sum(len(text) + 1 for _, text in gap) + 1 + _length(pieces)
            if grown <= self.max_chars:
                self.current.extend(gap)
                self.current.extend(pieces)
                self.size = grown
                return
            self.flush()
        self.current = list(pieces)
        self.size = _length(pieces)

    def add_atom(self, atom: _Atom) -> None:
        """Add a line or fence of a paragraph too large for one chunk (rules 2 and 3)."""
        size = _length(atom.pieces)
        if size <= self.max_chars:
            self.add(atom.pieces, atom.gap)
        elif atom.fence:
            self.flush()
            self.emit(atom.pieces)
        else:
            self.flush()
            index, text = atom.pieces[0]
            cuts = [(index, text[at:at + self.max_chars])
                    for at in range(0, len(text), self.max_chars)]
            for cut in cuts[:-1]:
                self.emit([cut])
            self.add(cuts[-1:])

    def flush(self) -> None:
        self.emit(self.current)
        self.current, self.size = [], 0

    def emit(self, pieces: Sequence[Piece]) -> None:
        """Record a chunk without its outer blank lines, or nothing if only blanks remain."""
        first = next((n for n, (_, text) in enumerate(pieces) if not is_blank(text)), None)
        if first is None:
            return
        last = max(n for n, (_, text) in enumerate(pieces) if not is_blank(text))
        self.done.append(list(pieces[first:last + 1]))


def _paragraphs(
    lines: Sequence[str], start: int, end: int, fence_end: Mapping[int, int],
) -> list[list[_Atom]]:
    """Atoms grouped into paragraphs; blank lines inside fences do not separate them."""
    paragraphs: list[list[_Atom]] = []
    gap: list[Piece] = []
    index = start
    while index < end:
        stop = min(fence_end.get(index, index + 1), end)
        pieces = tuple((n, lines[n]) for n in range(index, stop))
        if index not in fence_end and is_blank(lines[index]):
            gap.append(pieces[0])
        elif gap or not paragraphs:
            paragraphs.append([_Atom(tuple(gap), pieces, index in fence_end)])
            gap = []
        else:
            paragraphs[-1].append(_Atom((), pieces, index in fence_end))
        index = stop
    return paragraphs


def _glue_headings(
    paragraphs: Iterable[list[_Atom]], heading_lines: frozenset[int],
) -> list[list[_Atom]]:
    glued: list[list[_Atom]] = []
    for paragraph in paragraphs:
        if glued and all(not atom.fence and atom.pieces[0][0] in heading_lines
                         for atom in glued[-1]):
            glued[-1] = glued[-1] + paragraph
        else:
            glued.append(paragraph)
    return glued


def _flatten(paragraph: Sequence[_Atom]) -> list[Piece]:
    pieces: list[Piece] = []
    for n, atom in enumerate(paragraph):
        if n:
            pieces.extend(atom.gap)
        pieces.extend(atom.pieces)
    return pieces


def _length(pieces: Sequence[Piece]) -> int:
    return sum(len(text) for _, text in pieces) + max(len(pieces) - 1, 0)


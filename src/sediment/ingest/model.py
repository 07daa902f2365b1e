"""Values passed between discovery, reading and chunking."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["ChunkedFile", "DocChunk", "Skipped", "SourceText", "source_ref"]

BREADCRUMB_SEPARATOR = " > "


@dataclass(frozen=True, slots=True)
class SourceText:
    """A file's decoded, newline-normalised text; ``path`` is posix and relative to root."""

    path: str
    text: str


@dataclass(frozen=True, slots=True)
class Skipped:
    """A path left out of a compile and the reason, reported instead of failing the build."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class DocChunk:
    """One piece of a source document with the provenance RFC 7.2 asks for.

    ``start_line`` and ``end_line`` are the 1-based lines of the chunk's first and last
    non-blank lines; ``heading_path`` lists the headings enclosing it, outermost first,
    including the heading of its own section.
    """

    content: str
    path: str
    start_line: int
    end_line: int
    heading_path: tuple[str, ...]
    kind: str

    def text_for_embedding(self) -> str:
        """Content preceded by a ``Guide > Install`` breadcrumb line and a blank line.

        Sub-chunks of a long section do not repeat its heading in ``content``; the
        breadcrumb gives every chunk its context. Empty headings are left out, and a chunk
        outside any heading is embedded as its content alone.
        """
        crumbs = BREADCRUMB_SEPARATOR.join(h for h in self.heading_path if h)
        return f"{crumbs}\n\n{self.content}" if crumbs else self.content


class ChunkedFile(NamedTuple):
    """Chunks of one file and the problems found that did not stop chunking it.

    Warnings read ``path:line: message``. A tuple so ``chunks, warnings = chunk_file(...)``.
    """

    chunks: list[DocChunk]
    warnings: list[str]


def source_ref(chunk: DocChunk) -> str:
    """The RFC's ``file:line`` provenance reference: posix path and 1-based start line."""
    return f"{chunk.path}:{chunk.start_line}"

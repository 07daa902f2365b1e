"""Turn one document into ``DocChunk``s: Markdown by section, other text by paragraph.

Markdown (see ``MARKDOWN_SUFFIXES``; also ``llms.txt``, which is Markdown by its spec):

- Front matter is not content. Its ``kind:`` labels every chunk of the file (see
  ``sediment.ingest.kinds``); line numbers still count its lines.
- A section runs from a heading (see ``sediment.ingest.markdown``) to the next heading;
  text before the first heading is a section without a heading. A section that is only a
  heading is merged into the section after it when that one is nested deeper (``# Guide``
  straight above ``## Install``), so a title is not embedded on its own.
- Sections are cut to ``max_chars`` as ``sediment.ingest.packing`` describes; a section
  that fits is one chunk. There is no minimum size: a short section is a whole thought,
  and gluing it to an unrelated neighbour would blur both embeddings.

Other files are cut the same way, by paragraphs, with no headings or fences.

Every chunk records the 1-based lines of its first and last non-blank lines, and the
headings above it. Problems that do not stop chunking (a refused ``kind:``, an unclosed
fence or front matter) are returned as warnings ``path:line: message``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from sediment.errors import ValidationError
from sediment.ingest.frontmatter import front_matter_problem, parse_front_matter
from sediment.ingest.kinds import DEFAULT_KIND, KindRule, resolve_kind
from sediment.ingest.markdown import Outline, scan
from sediment.ingest.model import ChunkedFile, DocChunk, source_ref
from sediment.ingest.packing import Piece, pack_lines
from sediment.ingest.text import is_blank, split_lines

__all__ = [
    "DEFAULT_MAX_CHARS",
    "MARKDOWN_NAMES",
    "MARKDOWN_SUFFIXES",
    "ChunkedFile",
    "DocChunk",
    "KindRule",
    "chunk_file",
    "chunk_markdown",
    "chunk_text",
    "is_markdown",
    "source_ref",
]

DEFAULT_MAX_CHARS = 1000
"""About the 256 word pieces all-MiniLM-L6-v2 reads of English prose; a longer chunk's tail
would be invisible to vector search (it truncates), though BM25 would still see it."""
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".mdc", ".mdown", ".mkd", ".mkdn"})
MARKDOWN_NAMES = frozenset({"llms.txt", "llms-full.txt"})


@dataclass(frozen=True, slots=True)
class _Section:
    start: int
    end: int
    level: int
    heading_path: tuple[str, ...]
    bare: bool


def is_markdown(path: str) -> bool:
    """Whether ``path`` is chunked as Markdown; suffixes and names compare case-insensitively."""
    name = PurePosixPath(path).name.lower()
    return name in MARKDOWN_NAMES or PurePosixPath(name).suffix in MARKDOWN_SUFFIXES


def chunk_file(
    path: str,
    text: str,
    max_chars: int = DEFAULT_MAX_CHARS,
    *,
    rules: Sequence[KindRule] = (),
    default_kind: str = DEFAULT_KIND,
) -> ChunkedFile:
    """Chunk ``text`` as Markdown or plain text, chosen by ``is_markdown(path)``."""
    chunk = chunk_markdown if is_markdown(path) else chunk_text
    return chunk(text, path, max_chars=max_chars, rules=rules, default_kind=default_kind)


def chunk_markdown(
    text: str,
    path: str,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    rules: Sequence[KindRule] = (),
    default_kind: str = DEFAULT_KIND,
) -> ChunkedFile:
    """Chunks of a Markdown document whose root-relative posix path is ``path``."""
    _check_max_chars(max_chars)
    lines = split_lines(text)
    warnings: list[str] = []
    front = parse_front_matter(lines)
    if front is None and (problem := front_matter_problem(lines)):
        warnings.append(f"{path}:{problem}")
    kind, refused = resolve_kind(path, front.fields.get("kind") if front else None, rules,
                                 default_kind)
    if front and refused:
        warnings.append(f"{path}:{front.lines['kind']}: {refused}")
    body = front.body_start if front else 0
    outline = scan(lines, body)
    warnings.extend(f"{path}:{fence.start + 1}: code fence is never closed; it runs to the end "
                    "of the file" for fence in outline.fences if not fence.closed)
    chunks = [
        _chunk(pieces, path, section.heading_path, kind)
        for section in _merge_bare(_sections(lines, outline, body))
        for pieces in pack_lines(lines, section.start, section.end, max_chars,
                                 fence_end=outline.fence_end,
                                 heading_lines=outline.heading_lines)
    ]
    return ChunkedFile(chunks, warnings)


def chunk_text(
    text: str,
    path: str,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    rules: Sequence[KindRule] = (),
    default_kind: str = DEFAULT_KIND,
) -> ChunkedFile:
    """Chunks of a plain-text document: paragraphs packed to ``max_chars``, no headings."""
    _check_max_chars(max_chars)
    lines = split_lines(text)
    kind, _ = resolve_kind(path, None, rules, default_kind)
    packed = pack_lines(lines, 0, len(lines), max_chars, fence_end={})
    return ChunkedFile([_chunk(pieces, path, (), kind) for pieces in packed], [])


def _check_max_chars(max_chars: int) -> None:
    if max_chars < 1:
        raise ValidationError(f"max_chars must be at least 1, got {max_chars}")


def _chunk(pieces: Sequence[Piece], path: str, heading_path: tuple[str, ...],
           kind: str) -> DocChunk:
    return DocChunk(
        content="\n".join(text for _, text in pieces),
        path=path,
        start_line=pieces[0][0] + 1,
        end_line=pieces[-1][0] + 1,
        heading_path=heading_path,
        kind=kind,
    )


def _sections(lines: Sequence[str], outline: Outline, body: int) -> list[_Section]:
    headings = outline.headings
    first = headings[0].start if headings else len(lines)
    sections = [_Section(body, first, 0, (), bare=False)] if first > body else []
    stack: list[tuple[int, str]] = []
    for n, heading in enumerate(headings):
        end = headings[n + 1].start if n + 1 < len(headings) else len(lines)
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.title))
        bare = all(is_blank(line) for line in lines[heading.end:end])
        sections.append(_Section(heading.start, end, heading.level,
                                 tuple(title for _, title in stack), bare))
    return sections


def _merge_bare(sections: Sequence[_Section]) -> list[_Section]:
    """Fold each heading-only section into the next one when that one is nested deeper."""
    merged: list[_Section] = []
    carried: int | None = None
    for n, section in enumerate(sections):
        start = section.start if carried is None else carried
        following = sections[n + 1] if n + 1 < len(sections) else None
        if section.bare and following is not None and following.level > section.level:
            carried = start
            continue
        merged.append(replace(section, start=start))
        carried = None
    return merged

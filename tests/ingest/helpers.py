"""Assertions shared by the chunker tests."""

from __future__ import annotations

from collections.abc import Sequence

from sediment.ingest import DocChunk
from sediment.ingest.text import split_lines


def assert_provenance(text: str, chunks: Sequence[DocChunk], max_chars: int) -> None:
    """Each chunk's first and last lines are the source lines its line numbers name.

    A line longer than ``max_chars`` may have been cut; then the chunk holds a piece of it.
    """
    lines = split_lines(text)
    for chunk in chunks:
        parts = chunk.content.split("\n")
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines), chunk
        for part, number in ((parts[0], chunk.start_line), (parts[-1], chunk.end_line)):
            source = lines[number - 1]
            assert part.strip(), chunk
            assert part == source or (len(source) > max_chars and part in source), (chunk, source)

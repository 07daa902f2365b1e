"""Sources of a compile (RFC 15.1): find files, read them safely, chunk them with provenance.

``discover`` lists the files the globs select, ``read_text_file`` decodes one or says why
it is skipped, and ``chunk_file`` cuts it into ``DocChunk``s carrying ``path:line``
provenance (``source_ref``) and a ``kind``.
"""

from sediment.ingest.chunker import (
    DEFAULT_MAX_CHARS,
    MARKDOWN_NAMES,
    MARKDOWN_SUFFIXES,
    chunk_file,
    chunk_markdown,
    chunk_text,
    is_markdown,
)
from sediment.ingest.discover import (
    ALWAYS_EXCLUDED_DIRS,
    DEFAULT_EXCLUDED_DIRS,
    discover,
    selector,
)
from sediment.ingest.kinds import DEFAULT_KIND, KindRule, kind_problem, resolve_kind
from sediment.ingest.model import ChunkedFile, DocChunk, Skipped, SourceText, source_ref
from sediment.ingest.sources import BINARY_SNIFF_BYTES, DEFAULT_MAX_BYTES, read_text_file

__all__ = [
    "ALWAYS_EXCLUDED_DIRS",
    "BINARY_SNIFF_BYTES",
    "DEFAULT_EXCLUDED_DIRS",
    "DEFAULT_KIND",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_CHARS",
    "MARKDOWN_NAMES",
    "MARKDOWN_SUFFIXES",
    "ChunkedFile",
    "DocChunk",
    "KindRule",
    "Skipped",
    "SourceText",
    "chunk_file",
    "chunk_markdown",
    "chunk_text",
    "discover",
    "is_markdown",
    "kind_problem",
    "read_text_file",
    "resolve_kind",
    "selector",
    "source_ref",
]

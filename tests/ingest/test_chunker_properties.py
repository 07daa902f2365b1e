"""Properties of the chunker over generated Markdown-like documents and arbitrary text.

Invariants checked:
(a) content is neither lost, duplicated nor reordered: the non-blank lines of the chunks are
    exactly the non-blank body lines when no line is longer than ``max_chars``; otherwise
    (lines were cut) the concatenation of all chunk text equals that of the body, ignoring
    whitespace;
(b) a chunk's first and last lines are the source lines at ``start_line`` / ``end_line``
    (pieces of them for cut lines), and chunks follow the source order;
(c) a chunk is at most ``max_chars`` long unless it is a single fenced block, verbatim;
(d) chunking is deterministic;
(e) any text at all is chunked without an exception.
"""

from __future__ import annotations

import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.ingest import DocChunk, chunk_markdown, chunk_text
from sediment.ingest.text import is_blank, split_lines

from .helpers import assert_provenance

_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")

words = st.text(alphabet="ab #-=`~*>_\t1.", min_size=0, max_size=12)
plain_word = st.text(alphabet="abcdefgh", min_size=1, max_size=8)


@st.composite
def sentence(draw: st.DrawFn, max_words: int = 12) -> str:
    parts = draw(st.lists(st.one_of(plain_word, words), min_size=1, max_size=max_words))
    indent = draw(st.sampled_from(["", "", "", " ", "  ", "    ", "\t"]))
    return indent + " ".join(parts)


@st.composite
def block(draw: st.DrawFn) -> list[str]:
    choice = draw(st.sampled_from(
        ["atx", "setext", "paragraph", "paragraph", "fence", "blank", "rule", "list", "long"]))
    if choice == "atx":
        return ["#" * draw(st.integers(1, 7)) + " " + draw(sentence(4))]
    if choice == "setext":
        return [draw(plain_word), draw(st.sampled_from(["===", "---", "-", "=  "]))]
    if choice == "paragraph":
        return draw(st.lists(sentence(), min_size=1, max_size=5))
    if choice == "fence":
        char = draw(st.sampled_from("`~"))
        size = draw(st.integers(3, 5))
        body = draw(st.lists(st.one_of(sentence(), st.just(""), st.just("# inside"),
                                       st.just("---"), st.just(char * 3)), max_size=8))
        close = [char * draw(st.integers(size, 6))] if draw(st.booleans()) else []
        return [char * size + draw(st.sampled_from(["", "py", " sh"])), *body, *close]
    if choice == "blank":
        return [draw(st.sampled_from(["", "", "  ", "\t"]))] * draw(st.integers(1, 3))
    if choice == "rule":
        return [draw(st.sampled_from(["---", "***", "___", "- - -"]))]
    if choice == "list":
        return [f"- {draw(sentence())}" for _ in range(draw(st.integers(1, 3)))]
    return [draw(plain_word) * draw(st.integers(20, 60))]


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, int]:
    """A Markdown-ish document and the index of its first body line (after front matter)."""
    lines: list[str] = []
    if draw(st.booleans()):
        kind = draw(st.sampled_from(["note", "Bad Kind", "decision", "meta.x"]))
        lines = ["---", "title: t", f"kind: {kind}", "---"]
    body = len(lines)
    for part in draw(st.lists(block(), max_size=25)):
        lines.extend(part)
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    return newline.join(lines), body


max_chars = st.integers(min_value=1, max_value=400)


def chunk_lines(chunks: list[DocChunk]) -> list[str]:
    return [line for c in chunks for line in c.content.split("\n") if not is_blank(line)]


def squash(items: list[str]) -> str:
    return re.sub(r"\s+", "", "".join(items))


def assert_size(text: str, chunks: list[DocChunk], limit: int) -> None:
    lines = split_lines(text)
    for chunk in chunks:
        if len(chunk.content) > limit:
            assert _FENCE_LINE.match(chunk.content), chunk
            assert chunk.content == "\n".join(lines[chunk.start_line - 1:chunk.end_line]), chunk


def assert_order(text: str, chunks: list[DocChunk], limit: int) -> None:
    """Chunks follow the source; two share a line only when it was cut for length."""
    lines = split_lines(text)
    for before, after in itertools.pairwise(chunks):
        assert before.end_line <= after.start_line
        if before.end_line == after.start_line:
            assert len(lines[after.start_line - 1]) > limit


@settings(max_examples=200, deadline=None)
@given(documents(), max_chars)
def test_markdown_invariants(doc: tuple[str, int], limit: int) -> None:
    text, body = doc
    chunks, _ = chunk_markdown(text, "doc.md", max_chars=limit)
    source = split_lines(text)
    expected = [line for line in source[body:] if not is_blank(line)]
    if all(len(line) <= limit for line in source):
        assert chunk_lines(chunks) == expected
    assert squash(chunk_lines(chunks)) == squash(expected)
    assert_provenance(text, chunks, limit)
    assert_size(text, chunks, limit)
    assert_order(text, chunks, limit)
    assert all(c.content == c.content.strip("\n") and c.content.strip() for c in chunks)
    assert chunk_markdown(text, "doc.md", max_chars=limit) == (chunks, _)


@settings(max_examples=100, deadline=None)
@given(documents(), max_chars)
def test_plain_text_invariants(doc: tuple[str, int], limit: int) -> None:
    text, _ = doc
    chunks, warnings = chunk_text(text, "doc.txt", max_chars=limit)
    expected = [line for line in split_lines(text) if not is_blank(line)]
    if all(len(line) <= limit for line in expected):
        assert chunk_lines(chunks) == expected
    assert squash(chunk_lines(chunks)) == squash(expected)
    assert_provenance(text, chunks, limit)
    assert all(len(c.content) <= limit for c in chunks)
    assert all(c.heading_path == () for c in chunks)
    assert warnings == []


@settings(max_examples=300, deadline=None)
@given(st.text() | st.text(alphabet="#`~-=*>_ \t\n\r:ab\ufeff\u2028\x00"), max_chars)
def test_arbitrary_text_never_raises(text: str, limit: int) -> None:
    for chunk in (chunk_markdown, chunk_text):
        chunks, _ = chunk(text, "x.md", max_chars=limit)
        assert_provenance(text, chunks, limit)
        assert_size(text, chunks, limit)
        assert_order(text, chunks, limit)

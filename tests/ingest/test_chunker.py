"""chunk_markdown / chunk_text / chunk_file: structure, sizes and provenance."""

from __future__ import annotations

import pytest

from sediment.errors import ValidationError
from sediment.ingest import (
    DocChunk,
    KindRule,
    chunk_file,
    chunk_markdown,
    chunk_text,
    is_markdown,
    source_ref,
)

from .helpers import assert_provenance


def chunks_of(text: str, max_chars: int = 2000, path: str = "doc.md") -> list[DocChunk]:
    chunks, warnings = chunk_markdown(text, path, max_chars=max_chars)
    assert_provenance(text, chunks, max_chars)
    assert warnings == []
    return chunks


def summary(chunks: list[DocChunk]) -> list[tuple[int, int, tuple[str, ...]]]:
    return [(c.start_line, c.end_line, c.heading_path) for c in chunks]


def test_atx_headings_split_sections_and_nest() -> None:
    text = (
        "Intro line.\n\n# Guide\nWelcome.\n\n## Install\nRun it.\n\n### Linux\napt\n\n"
        "## Use\nCall it.\n\n# Reference ##\nAPI.\n"
    )
    chunks = chunks_of(text)
    assert summary(chunks) == [
        (1, 1, ()),
        (3, 4, ("Guide",)),
        (6, 7, ("Guide", "Install")),
        (9, 10, ("Guide", "Install", "Linux")),
        (12, 13, ("Guide", "Use")),
        (15, 16, ("Reference",)),
    ]
    assert chunks[1].content == "# Guide\nWelcome."


def test_atx_heading_details() -> None:
    text = "#hashtag\n\n   ### Indented ok\nx\n\n    # code, not heading\n\n#\ny\n"
    chunks = chunks_of(text)
    assert summary(chunks) == [(1, 1, ()), (3, 6, ("Indented ok",)), (8, 9, ("",))]


def test_setext_headings() -> None:
    text = "Title\n=====\nIntro.\n\nPart one\n--------\nBody.\n\nMulti\nline title\n---\nMore.\n"
    chunks = chunks_of(text)
    assert summary(chunks) == [
        (1, 3, ("Title",)),
        (5, 7, ("Title", "Part one")),
        (9, 12, ("Title", "Multi line title")),
    ]


def test_dashes_after_blank_list_or_quote_are_thematic_breaks() -> None:
    text = "# A\npara\n\n---\n\n- item\n---\n> quote\n---\n    code\n---\n"
    assert summary(chunks_of(text)) == [(1, 11, ("A",))]


def test_equals_after_blank_is_text() -> None:
    assert summary(chunks_of("a\n\n===\nb\n")) == [(1, 4, ())]


def test_fences_hide_headings() -> None:
    text = (
        "# Real\n\n```python\n# comment\n## not heading\nSetext?\n---\n```\n\n"
        "~~~~\n# tilde\n~~~\n```\n# still inside\n~~~~\n\n# Next\n"
    )
    chunks = chunks_of(text)
    assert summary(chunks) == [(1, 15, ("Real",)), (17, 17, ("Next",))]


def test_fence_closing_rules() -> None:
    text = "# A\n````\n```\n# in\n````\n# B\n```` x\n~~~~\n````  \n# C\n"
    assert [c.heading_path for c in chunks_of(text)] == [("A",), ("B",), ("C",)]


def test_backtick_info_with_backtick_is_not_a_fence() -> None:
    assert [c.heading_path for c in chunks_of("``` a`b\n# H\n")] == [(), ("H",)]


def test_unclosed_fence_runs_to_end_with_warning() -> None:
    text = "# A\n\n```\n# B\n\n# C\n"
    chunks, warnings = chunk_markdown(text, "d.md")
    assert summary(chunks) == [(1, 6, ("A",))]
    assert warnings == ["d.md:3: code fence is never closed; it runs to the end of the file"]


def test_html_comment_hides_headings() -> None:
    text = "# A\n<!--\n# hidden\n-->\n<!-- one line --> \n# B\n"
    assert summary(chunks_of(text)) == [(1, 5, ("A",)), (6, 6, ("B",))]


def test_front_matter_sets_kind_and_is_not_content() -> None:
    text = "---\ntitle: \"x: y\"\nkind: decision # why\n---\n\n# Choice\nWe chose X.\n"
    chunks = chunks_of(text)
    assert [(c.kind, c.start_line, c.content) for c in chunks] == [
        ("decision", 6, "# Choice\nWe chose X.")]


def test_front_matter_kind_quoted_and_closed_by_dots() -> None:
    chunks = chunks_of("---\nkind: 'runbook'\n...\nbody\n")
    assert [(c.kind, c.start_line) for c in chunks] == [("runbook", 4)]


def test_bad_front_matter_kind_warns_and_falls_back() -> None:
    text = "---\nkind: Decision\n---\nbody\n"
    rules = [KindRule("docs/**", "guide")]
    chunks, warnings = chunk_markdown(text, "docs/a.md", rules=rules)
    assert [c.kind for c in chunks] == ["guide"]
    assert warnings == ["docs/a.md:2: front matter kind 'Decision' must match "
                        "^[a-z0-9][a-z0-9._-]{0,63}$; using the rule or default kind instead"]
    chunks, warnings = chunk_markdown("---\nkind: meta.proposal_event\n---\nx\n", "a.md")
    assert [c.kind for c in chunks] == ["canonical"]
    assert "reserved" in warnings[0]


def test_unclosed_front_matter_is_markdown_with_warning() -> None:
    chunks, warnings = chunk_markdown("---\nkind: note\n\n# Title\n", "a.md")
    assert [(c.start_line, c.kind) for c in chunks] == [(1, "canonical"), (4, "canonical")]
    assert warnings == ["a.md:1: front matter is never closed; it is read as Markdown"]


def test_front_matter_with_prose_is_markdown_with_warning() -> None:
    chunks, warnings = chunk_markdown("---\nkind: note\nSome prose.\n---\n", "a.md")
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 1), (2, 4)]
    assert warnings == ["a.md:3: front matter has a line that is not YAML; it is read as Markdown"]


def test_rules_around_text_are_not_front_matter() -> None:
    for text in ("---\n\nJust a rule first.\n", "---\nIntro text.\n---\n", "---\n# a\n---\n"):
        chunks, warnings = chunk_markdown(text, "a.md")
        assert (chunks[0].start_line, warnings) == (1, [])


def test_front_matter_may_hold_nested_yaml() -> None:
    text = "---\ntags:\n  - a\n- b\n# note\n'quoted key': 1\nkind: runbook\n---\nBody\n"
    assert [(c.kind, c.start_line) for c in chunks_of(text)] == [("runbook", 9)]


def test_kind_rules_first_match_wins_and_default_applies() -> None:
    rules = [KindRule("docs/adr/**", "decision"), KindRule("docs/**", "guide")]
    kinds = {
        path: chunk_file(path, "text\n", rules=rules, default_kind="note").chunks[0].kind
        for path in ("docs/adr/1.md", "docs/x.md", "README.md", "docs/notes.txt")
    }
    assert kinds == {"docs/adr/1.md": "decision", "docs/x.md": "guide", "README.md": "note",
                     "docs/notes.txt": "guide"}
    assert chunk_file("a.md", "x").chunks[0].kind == "canonical"


def test_blank_lines_are_trimmed_and_indentation_kept() -> None:
    text = "\n\n   \n# A\n\n\n    indented code\n  two\n\n \n"
    chunks = chunks_of(text)
    assert [c.content for c in chunks] == ["# A\n\n\n    indented code\n  two"]
    assert summary(chunks) == [(4, 8, ("A",))]


def test_empty_and_whitespace_documents_give_no_chunks() -> None:
    for text in ("", "\n\n", "  \n\t\n", "---\nkind: x\n---\n\n"):
        assert chunks_of(text) == []


def test_section_that_fits_is_one_chunk() -> None:
    text = "# A\n\npara one\n\npara two\n"
    assert [c.content for c in chunks_of(text, max_chars=len(text) - 1)] == [text.strip()]


def test_paragraphs_pack_greedily() -> None:
    paras = ["a" * 10, "b" * 10, "c" * 10, "d" * 25]
    text = "\n\n".join(paras) + "\n"
    chunks = chunks_of(text, max_chars=22)
    assert [c.content for c in chunks] == ["a" * 10 + "\n\n" + "b" * 10, "c" * 10, "d" * 22,
                                           "ddd"]
    chunks = chunks_of(text, max_chars=34)
    assert [c.content for c in chunks] == ["a" * 10 + "\n\n" + "b" * 10 + "\n\n" + "c" * 10,
                                           "d" * 25]


def test_multiple_blank_lines_count_toward_size() -> None:
    text = "aaaa\n\n\n\nbbbb\n"
    assert [c.content for c in chunks_of(text, max_chars=12)] == ["aaaa\n\n\n\nbbbb"]
    assert [c.content for c in chunks_of(text, max_chars=11)] == ["aaaa", "bbbb"]


def test_long_paragraph_splits_at_lines() -> None:
    text = "# Head\n" + "\n".join(f"line {n:02}" for n in range(6)) + "\n"
    chunks = chunks_of(text, max_chars=23)
    assert [c.content for c in chunks] == [
        "# Head\nline 00\nline 01", "line 02\nline 03\nline 04", "line 05"]
    assert [c.heading_path for c in chunks] == [("Head",)] * 3
    assert summary(chunks)[1] == (4, 6, ("Head",))


def test_long_line_is_cut_at_max_chars() -> None:
    text = "x" * 25 + "\nshort\n"
    chunks = chunks_of(text, max_chars=11)
    assert [(c.content, c.start_line, c.end_line) for c in chunks] == [
        ("x" * 11, 1, 1), ("x" * 11, 1, 1), ("xxx\nshort", 1, 2)]


def test_cut_pieces_that_are_only_spaces_are_dropped() -> None:
    chunks = chunks_of("ab" + " " * 20 + "cd\n", max_chars=10)
    assert [c.content for c in chunks] == ["ab        ", "  cd"]


def test_large_fence_is_kept_whole_and_alone() -> None:
    fence = "```\n" + "\n".join(["code line"] * 10) + "\n\n" + "after blank\n```"
    text = f"# A\nIntro.\n{fence}\nOutro.\n"
    chunks = chunks_of(text, max_chars=30)
    assert [c.content for c in chunks] == ["# A\nIntro.", fence, "Outro."]
    assert summary(chunks) == [(1, 2, ("A",)), (3, 16, ("A",)), (17, 17, ("A",))]


def test_small_fence_is_not_split_across_chunks() -> None:
    fence = "```\n1\n\n2\n```"
    text = "aaaaaaaaaa\n" + fence + "\n"
    chunks = chunks_of(text, max_chars=16)
    assert [c.content for c in chunks] == ["aaaaaaaaaa", fence]


def test_heading_is_glued_to_its_first_paragraph() -> None:
    text = "## Install\n\n" + "word " * 5 + "\n\n" + "more " * 5 + "\n"
    chunks = chunks_of(text, max_chars=40)
    assert chunks[0].content.startswith("## Install\n\nword")


def test_heading_only_section_merges_into_nested_section() -> None:
    text = "# Guide\n\n## Install\n\nRun it.\n\n## Use\nUse it.\n"
    assert summary(chunks_of(text)) == [(1, 5, ("Guide", "Install")), (7, 8, ("Guide", "Use"))]


def test_heading_only_section_before_sibling_stays_alone() -> None:
    text = "## Deprecated\n\n## Current\nYes.\n"
    assert summary(chunks_of(text)) == [(1, 1, ("Deprecated",)), (3, 4, ("Current",))]


def test_crlf_and_bom_input_is_normalised() -> None:
    text = "\ufeff# A\r\nbody\r\n\r\n# B\rmore\r"
    chunks = chunks_of(text)
    assert [c.content for c in chunks] == ["# A\nbody", "# B\nmore"]
    assert summary(chunks) == [(1, 2, ("A",)), (4, 5, ("B",))]


def test_plain_text_ignores_markdown_structure() -> None:
    text = "# not a heading\npara\n\n```\nx\n\ny\n"
    chunks, warnings = chunk_text(text, "notes.txt", max_chars=20)
    assert_provenance(text, chunks, 20)
    assert [(c.content, c.heading_path) for c in chunks] == [
        ("# not a heading\npara", ()), ("```\nx\n\ny", ())]
    assert warnings == []


@pytest.mark.parametrize(
    ("path", "markdown"),
    [("a.md", True), ("docs/A.MD", True), ("x.markdown", True), ("c.mdx", True),
     ("rules.mdc", True), ("llms.txt", True), ("docs/LLMS-full.txt", True),
     ("notes.txt", False), ("README", False), ("a.rst", False), ("md", False)],
)
def test_markdown_is_chosen_by_name(path: str, markdown: bool) -> None:
    assert is_markdown(path) is markdown
    heading_path = chunk_file(path, "# H\nx\n").chunks[0].heading_path
    assert heading_path == (("H",) if markdown else ())


def test_text_for_embedding_and_source_ref() -> None:
    chunk = DocChunk("Run it.", "docs/a.md", 7, 7, ("Guide", "", "Install"), "canonical")
    assert chunk.text_for_embedding() == "Guide > Install\n\nRun it."
    assert DocChunk("x", "a.md", 1, 1, (), "canonical").text_for_embedding() == "x"
    assert source_ref(chunk) == "docs/a.md:7"


def test_chunk_file_returns_unpackable_result() -> None:
    result = chunk_file("a.md", "# A\nx\n", 100)
    chunks, warnings = result
    assert chunks is result.chunks and warnings is result.warnings


@pytest.mark.parametrize("bad", [0, -5])
def test_max_chars_must_be_positive(bad: int) -> None:
    with pytest.raises(ValidationError, match="max_chars must be at least 1"):
        chunk_file("a.md", "x", bad)
    with pytest.raises(ValidationError, match="max_chars must be at least 1"):
        chunk_text("x", "a.txt", max_chars=bad)

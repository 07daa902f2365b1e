"""Text normalisation shared by reading and chunking, so both count lines the same way."""

from __future__ import annotations

__all__ = ["is_blank", "normalize_text", "split_lines"]

BOM = "\ufeff"


def normalize_text(text: str) -> str:
    """Drop a leading BOM and turn CRLF and lone CR into LF.

    Only these three are line breaks: Unicode separators such as U+2028 stay inside a line,
    so line numbers agree with ``git blame`` and editors that count LF-terminated lines.
    """
    if text.startswith(BOM):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def split_lines(text: str) -> list[str]:
    """Lines of normalised text; index ``i`` is line ``i + 1`` of the source."""
    return normalize_text(text).split("\n")


def is_blank(line: str) -> bool:
    """Whether a line holds only whitespace; such lines separate paragraphs."""
    return not line.strip()

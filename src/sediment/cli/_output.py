"""What the CLI prints for people and programs: literal text, JSON, notes and progress.

Chunk contents, memories, manifests, file names and metadata are data written by whoever
wrote the layer: they are printed literally (no console markup, no emoji codes) and with
control characters made visible, so a chunk cannot clear, recolour or rewrite the screen of
the person reviewing it, nor reorder what they read with bidirectional overrides. JSON
output keeps every value exact (those characters become ``\\uXXXX`` escapes, which decode
to the same string).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from sediment.format.visible import escape_json_text
from sediment.format.visible import visible as visible


def snippet(text: str, width: int = 70) -> str:
    """The text on one line (whitespace runs collapsed), made visible, at most ``width``
    characters with an ellipsis when cut."""
    flat = visible(" ".join(text.split()))
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def width() -> int:
    """Columns of the terminal (COLUMNS when set); 80 when output is not a terminal."""
    return max(shutil.get_terminal_size((80, 24)).columns, 40)


INDENT = "   "
PREVIEW_LINES = 2
_STRUCTURE = re.compile(r"^(\s{4}|\s*([#|>*+-]|\d+[.)])\s?)")
"""Lines that keep their own line with --full: headings, tables, quotes, list items, code."""


def text_lines(text: str, columns: int, *, full: bool = False) -> list[str]:
    """Untrusted ``text`` wrapped to ``columns`` (after the indent): a preview of two lines
    on one flattened paragraph, or with ``full`` every line of it."""
    body = max(columns - len(INDENT), 20)
    if not full:
        flat = snippet(text, body * PREVIEW_LINES + 1)
        lines = textwrap.wrap(flat, body, break_long_words=True, break_on_hyphens=False)
        if len(lines) > PREVIEW_LINES:
            lines = lines[:PREVIEW_LINES]
            lines[-1] = lines[-1][: body - 1] + "…"
        return lines
    out: list[str] = []
    para: list[str] = []
    fenced = False

    def flush() -> None:
        if para:
            out.extend(textwrap.wrap(" ".join(para), body, break_long_words=True,
                                     break_on_hyphens=False))
            para.clear()

    for raw in visible(text, keep_lines=True).expandtabs(4).splitlines():
        stripped = raw.strip()
        if stripped.startswith(("```", "~~~")):
            flush()
            fenced = not fenced
            out.append(raw)
        elif fenced or not stripped or _STRUCTURE.match(raw):
            flush()
            out.extend(textwrap.wrap(raw, body, break_long_words=True, break_on_hyphens=False,
                                     replace_whitespace=False, subsequent_indent="  ")
                       if len(raw) > body else [raw.rstrip()])
        else:
            para.append(stripped)
    flush()
    while out and not out[-1]:
        out.pop()
    return out


def entry(header: str, text: str | None = None, *, full: bool = False) -> list[str]:
    """One item for people: a header line (already made visible), then its text indented."""
    cols = width()
    lines = textwrap.wrap(header, cols, subsequent_indent=INDENT, break_long_words=True,
                          break_on_hyphens=False) or [header]
    if text is not None:
        lines.extend((INDENT + line) if line else "" for line in text_lines(text, cols,
                                                                             full=full))
    return lines


def print_entries(title: str, entries: list[list[str]]) -> None:
    """A titled list of entries separated by blank lines."""
    click.echo(f"\n{title}")
    for e in entries:
        click.echo("")
        for line in e:
            click.echo(line)


def to_stdout(out: Path | None, as_json: bool, what: str) -> bool:
    """Whether ``--out`` is ``-`` (stdout), which ``--json``'s report cannot share."""
    if out is None or str(out) != "-":
        return False
    if as_json:
        raise click.UsageError(f"--json reports on the {what}; it cannot share stdout with "
                               "--out -")
    return True


def console(*, stderr: bool = False) -> Console:
    """A console that prints every string literally: no markup, emoji codes or highlighting."""
    return Console(markup=False, emoji=False, highlight=False, width=width(), stderr=stderr,
                   soft_wrap=False)


def emit_json(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    click.echo(escape_json_text(text))


def verbosity() -> int:
    """-1 with --quiet, 1 with --verbose, else 0 (set by the options every command has)."""
    ctx = click.get_current_context(silent=True)
    return int(ctx.meta.get("sediment.verbosity", 0)) if ctx is not None else 0


def note(message: str) -> None:
    """A remark on stderr (``note: ...``) that --quiet silences."""
    if verbosity() >= 0:
        click.echo(visible(message), err=True)


def detail(message: str) -> None:
    """A line on stderr printed only with --verbose."""
    if verbosity() > 0:
        click.echo(visible(message), err=True)


def is_terminal() -> bool:
    return sys.stderr.isatty()

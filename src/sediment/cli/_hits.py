"""Search results for people, designed for an 80-column terminal first.

One block per hit: a header line with rank, score, ``layer:id`` (what ``inspect --id`` and
``promote --ids`` take), kind and source, then the text indented and wrapped to the
terminal (two lines unless ``--full``), then with ``--explain`` every part of the score::

    1  0.8123  base:12  canonical  README.md:40
       Precedence is local > user > delta > base: the same id in a higher layer wins,
       and the versions it hides are reported as conflicts.

Scores are printed with as many decimals as it takes to tell neighbouring hits apart.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Sequence

import click

from sediment.cli._output import INDENT, text_lines, visible, width
from sediment.search import Hit


def score_digits(scores: Sequence[float], *, least: int = 4, most: int = 8) -> int:
    """Decimals needed so that neighbouring distinct scores print differently."""
    digits = least
    ordered = sorted(scores, reverse=True)
    for a, b in itertools.pairwise(ordered):
        while digits < most and a != b and f"{a:.{digits}f}" == f"{b:.{digits}f}":
            digits += 1
    return digits


def _num(value: float | None, digits: int) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def explain_parts(hit: Hit, digits: int) -> list[str]:
    """Every part of a hit's score, in the order they were applied."""
    e = hit.explanation()
    parts = [f"vector {_num(e['vector_score'], 4)} (rank {e['vector_rank'] or '-'})",
             f"bm25 {_num(e['bm25_score'], 3)} (rank {e['bm25_rank'] or '-'})"]
    boosts = e["boosts"]
    fused = hit.score - sum(boosts.values())
    parts.append(f"fused {fused:.{digits}f}")
    parts.extend(f"{name} {delta:+.{digits}f}" for name, delta in boosts.items())
    if boosts:
        parts.append(f"= {hit.score:.{digits}f}")
    if e["approximate"]:
        parts.append("approximate index")
    if e["matched_layer"] != e["layer"]:
        parts.append(f"matched in {e['matched_layer']}")
    if e["hidden_versions"]:
        parts.append(f"hides {', '.join(e['hidden_versions'])}")
    return parts


def _pack(parts: list[str], columns: int, indent: str) -> list[str]:
    """``parts`` joined by ", " on lines of at most ``columns``, never breaking a part."""
    lines: list[str] = []
    line = ""
    for n, part in enumerate(parts):
        piece = part + ("," if n < len(parts) - 1 else "")
        if line and len(indent) + len(line) + 1 + len(piece) > columns:
            lines.append(indent + line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    if line:
        lines.append(indent + line)
    return lines


def render_hits(hits: Sequence[Hit], *, full: bool = False, explain: bool = False,
                columns: int | None = None) -> list[str]:
    """The lines of the human output of a search (without a trailing newline)."""
    cols = columns or width()
    digits = score_digits([h.score for h in hits])
    rank_w = len(str(len(hits)))
    lines: list[str] = []
    for n, h in enumerate(hits, 1):
        c = h.chunk
        source = visible(str(c.sources[0])) if c.sources else "-"
        more = f" +{len(c.sources) - 1}" if len(c.sources) > 1 else ""
        flag = "  (!) overrides a different version" if h.conflicts else ""
        header = (f"{n:>{rank_w}}  {h.score:.{digits}f}  {h.layer.value}:{c.id}  "
                  f"{visible(c.kind)}  {source}{more}{flag}")
        if lines:
            lines.append("")
        lines.extend(textwrap.wrap(header, cols, subsequent_indent=INDENT,
                                   break_long_words=True, break_on_hyphens=False) or [header])
        lines.extend((INDENT + line) if line else "" for line in text_lines(c.content, cols,
                                                                             full=full))
        if explain:
            lines.extend(_pack(explain_parts(h, digits), cols, INDENT))
    return lines


def print_hits(hits: Sequence[Hit], *, full: bool = False, explain: bool = False) -> None:
    for line in render_hits(hits, full=full, explain=explain):
        click.echo(line)
    if any(h.conflicts for h in hits):
        click.echo("\n(!) a lower layer holds a different version of this chunk; see "
                   "--explain, or `sediment inspect --id`")

"""One chunk for people: the ``inspect --id`` and ``proposals show`` view, with its
provenance resolved and every event about it (untrusted text printed literally)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from sediment.cli._output import emit_json, snippet, visible
from sediment.review import ChunkReport, ResolvedSource, SourceLines, inspect_chunk


def when(ms: int) -> str:
    """A chunk or event time for people: UTC to the second (0 means unknown)."""
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _print_source(s: ResolvedSource, indent: int) -> None:
    pad = "  " * indent
    remark = f"  [{visible(s.note)}]" if s.note else ""
    if s.type == "chunk" and s.chunk is not None:
        click.echo(f"{pad}- chunk {s.ref} ({visible(str(s.layer))}, {visible(s.chunk.kind)}, "
                   f"{visible(s.chunk.author)}): {snippet(s.chunk.content, 70)}{remark}")
        for sub in s.sources:
            _print_source(sub, indent + 1)
    elif s.type == "file" and s.found:
        click.echo(f"{pad}- {visible(str(s.ref))}: {visible(s.text or '')}")
    else:
        click.echo(f"{pad}- {visible(str(s.ref))}{remark}")


def print_chunk_report(report: ChunkReport) -> None:
    c = report.chunk
    where = report.layer or "not part of the layer set"
    click.echo(f"chunk {c.id} in {visible(report.path)} ({where})")
    author = c.author + (f" ({report.actor})" if report.actor else "")
    for key, value in (("kind", c.kind), ("author", author),
                       ("confidence", f"{c.confidence:.6g}"),
                       ("created", when(c.created_at_ms))):
        click.echo(f"  {key}: {visible(str(value))}")
    if report.versions:
        click.echo("  versions: " + ", ".join(
            f"{n}{'' if v.content == c.content else ' (different content)'}"
            for n, v in report.versions))
    for pid, status in report.proposals:
        click.echo(f"  proposal {pid}: {status}")
    click.echo("  content:")
    for line in visible(c.content, keep_lines=True).splitlines():
        click.echo("    " + line)
    click.echo("  sources:" + ("" if report.sources else " (none)"))
    for s in report.sources:
        _print_source(s, 2)
    click.echo("  events:" + ("" if report.events else " (none)"))
    for e in report.events:
        reason = e.data.get("reason")
        why = f" ({visible(str(reason))})" if reason else ""
        verb = visible(str(e.data.get("event", "")))
        click.echo(f"    - {when(e.created_at_ms)} {e.layer}:{e.id} {visible(e.kind)} {verb} "
                   f"by {visible(e.actor or e.author)}{why}")


def show_chunk(path: Path, chunk_id: int, *, lines: SourceLines, as_json: bool = False) -> None:
    """``inspect PATH --id N``: the chunk, its resolved provenance and its events."""
    report = inspect_chunk(path, chunk_id, lines=lines)
    if as_json:
        emit_json(report.to_dict())
    else:
        print_chunk_report(report)



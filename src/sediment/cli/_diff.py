"""``sediment diff``: what the delta layer adds and what it conflicts with (RFC 12, 15.5)."""

from __future__ import annotations

from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._options import get_config, json_option, open_store, store_layer_options
from sediment.cli._output import INDENT, emit_json, entry, print_entries, visible
from sediment.review import DEFAULT_THRESHOLD, diff_layers
from sediment.review.diff import without_local


@cli.command()
@click.option("--threshold", type=click.FloatRange(0.0, 1.0, min_open=True),
              default=DEFAULT_THRESHOLD, show_default=True,
              help="Cosine similarity at or above which different content is a near-duplicate "
                   "conflict.")
@store_layer_options
@json_option
@click.pass_context
def diff(ctx: click.Context, /, threshold: float, as_json: bool, store: str | None,
         layer_dir: Path | None, **paths: Path | None) -> None:
    """What the delta layer adds, which ids it overrides, what conflicts with base or user,
    and which proposals are pending (RFC 12, 15.5). The local layer is not compared."""
    ls = without_local(open_store(get_config(ctx), store, layer_dir, paths))
    report = diff_layers(ls, threshold)
    if as_json:
        emit_json(report.to_dict())
        return
    d = report.to_dict()
    s, lay = d["summary"], d["layers"]
    click.echo(f"delta {visible(str(lay.get('delta')))}: {s['delta_chunks']} chunk(s), "
               f"{s['events']} event(s)")
    click.echo(f"base {visible(str(lay.get('base') or '(absent)'))}")
    click.echo(f"user {visible(str(lay.get('user') or '(absent)'))}")
    click.echo(f"added {s['added']}, overrides {s['overrides']}, accepted {s['accepted']}, "
               f"conflicts {s['conflicts']}, duplicates {s['duplicates']}, pending proposals "
               f"{s['pending_proposals']}")
    for title, rows in (("Added", report.with_status("new")),
                        ("Overrides base", report.with_status("overrides-base",
                                                              "same-as-base"))):
        if rows:
            print_entries(f"{title} ({len(rows)})", [entry(
                f"delta:{r.chunk.id}  {visible(r.chunk.kind)}  confidence "
                f"{r.chunk.confidence:.2f}"
                + (f"  by {visible(r.actor)}" if r.actor else "")
                + (f"  proposal {r.proposal}" if r.proposal else "")
                + ("  (same as base)" if r.status == "same-as-base" else ""),
                r.chunk.content) for r in rows])
    for title, matches in (("Conflicts", report.conflicts), ("Duplicates", report.duplicates)):
        if matches:
            print_entries(f"{title} ({len(matches)})", [
                entry(f"{visible(m.type)}  delta:{m.delta.id} vs {m.layer.value}:{m.other.id}"
                      + ("" if m.similarity is None else f"  similarity {m.similarity:.3f}"),
                      m.delta.content)
                + entry(f"{INDENT}{m.layer.value}:{m.other.id}", m.other.content)[1:]
                for m in matches])
    if report.pending:
        print_entries(f"Pending proposals ({len(report.pending)})", [entry(
            f"proposal {p.proposal_id}  chunk {p.context_id}  "
            + (f"by {visible(p.actor)}  " if p.actor else "")
            + (f"{visible(p.chunk.kind)}  confidence {p.chunk.confidence:.2f}" if p.chunk
               else "(chunk missing)"),
            p.chunk.content if p.chunk else None) for p in report.pending])
        click.echo("\naccept with `sediment proposals accept ID`, reject with "
                   "`sediment proposals reject ID --reason ...`")

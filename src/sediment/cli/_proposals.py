"""``sediment proposals``: review what agents proposed for the user layer (RFC 11.2, 15.5)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._chunk import print_chunk_report, when
from sediment.cli._ids import CHUNK_ID
from sediment.cli._options import (
    get_config,
    json_option,
    layer_options,
    open_layerset,
    open_store,
    store_layer_options,
)
from sediment.cli._output import emit_json, entry, visible
from sediment.review import Outcome, accept, get_proposal, inspect_chunk, list_proposals, reject
from sediment.store import HUMAN_WRITABLE, LayerName


def echo_outcomes(outcomes: Sequence[Outcome], as_json: bool) -> None:
    if as_json:
        emit_json([o.to_dict() for o in outcomes])
    else:
        for o in outcomes:
            click.echo(visible(o.message))


@cli.group()
def proposals() -> None:
    """Review what agents proposed for promotion to the user layer (RFC 11.2, 15.5)."""


@proposals.command(name="list")
@click.option("--status", type=click.Choice(["all", "pending", "accepted", "rejected"]),
              default="all", show_default=True)
@store_layer_options
@json_option
@click.pass_context
def proposals_list(ctx: click.Context, /, status: str, as_json: bool, store: str | None,
                   layer_dir: Path | None, **paths: Path | None) -> None:
    """List proposals and their status (the fold of their events)."""
    ls = open_store(get_config(ctx), store, layer_dir, paths)
    views = list_proposals(ls, None if status == "all" else status)
    if as_json:
        emit_json([v.to_dict() for v in views])
        return
    if not views:
        click.echo("no proposals" + ("" if status == "all" else f" with status {status}"))
        return
    for n, v in enumerate(views):
        c = v.chunk
        if n:
            click.echo("")
        for line in entry(f"proposal {v.proposal_id}  {visible(str(v.status))}  chunk "
                          f"{v.context_id}  " + (f"{visible(c.kind)}  confidence "
                                                 f"{c.confidence:.2f}" if c else "(missing)"),
                          c.content if c else None):
            click.echo(line)


@proposals.command(name="show")
@click.argument("proposal_id", type=CHUNK_ID)
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Directory path:line sources are read from (default: the current one).")
@layer_options
@json_option
@click.pass_context
def proposals_show(ctx: click.Context, /, proposal_id: int, root: Path | None, as_json: bool,
                   layer_dir: Path | None, **paths: Path | None) -> None:
    """One proposal: its status, decisions, the chunk with its provenance and events."""
    ls = open_layerset(get_config(ctx), layer_dir, **paths)
    view = get_proposal(ls, proposal_id)
    holder = next((la for n in (LayerName.DELTA, LayerName.LOCAL)
                   if (la := ls.layer(n)) is not None and la.file.get(view.context_id)
                   is not None), None)
    report = (inspect_chunk(holder.path, view.context_id, layerset=ls, root=root)
              if holder is not None else None)
    if as_json:
        emit_json({**view.to_dict(), "inspection": report.to_dict() if report else None})
        return
    click.echo(f"proposal {view.proposal_id}: {visible(str(view.status))}, chunk "
               f"{view.context_id} from {visible(str(view.from_layer))}, proposed "
               f"{when(view.proposed_at_ms)}")
    for d in view.decisions:
        click.echo(f"  decision {d.id}: {visible(str(d.verdict))} by {visible(d.author)}, "
                   f"{when(d.created_at_ms)}" + (f" ({visible(d.reason)})" if d.reason else ""))
    if report is not None:
        print_chunk_report(report)
    else:
        click.echo(f"chunk {view.context_id} is no longer in delta or local")


@proposals.command(name="accept")
@click.argument("proposal_ids", nargs=-1, required=True, type=CHUNK_ID)
@click.option("--reason", default="", help="Why (optional; kept in the decision event).")
@store_layer_options
@json_option
@click.pass_context
def proposals_accept(ctx: click.Context, /, proposal_ids: tuple[int, ...], reason: str,
                     as_json: bool, store: str | None, layer_dir: Path | None,
                     **paths: Path | None) -> None:
    """Accept proposals: copy each chunk into the user layer (same id, author human) and
    record the decision in the delta layer. Accepting twice changes nothing."""
    ls = open_store(get_config(ctx), store, layer_dir, paths,
                    writes=HUMAN_WRITABLE)
    echo_outcomes(accept(ls, proposal_ids, reason), as_json)


@proposals.command(name="reject")
@click.argument("proposal_ids", nargs=-1, required=True, type=CHUNK_ID)
@click.option("--reason", required=True, help="Why the proposal is rejected (required).")
@store_layer_options
@json_option
@click.pass_context
def proposals_reject(ctx: click.Context, /, proposal_ids: tuple[int, ...], reason: str,
                     as_json: bool, store: str | None, layer_dir: Path | None,
                     **paths: Path | None) -> None:
    """Reject proposals with a reason; the decision is an event, nothing is deleted."""
    ls = open_store(get_config(ctx), store, layer_dir, paths,
                    writes=HUMAN_WRITABLE)
    echo_outcomes(reject(ls, proposal_ids, reason), as_json)



"""``sediment proposals``: review what agents proposed for the user layer (RFC 11.2, 15.5)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from sediment.cli._app import cli
from sediment.cli._chunk import print_chunk_report, when
from sediment.cli._ids import CHUNK_ID
from sediment.cli._options import (
    get_config,
    json_option,
    open_store,
    source_lines,
    store_layer_options,
)
from sediment.cli._output import emit_json, entry, visible
from sediment.errors import ValidationError
from sediment.review import Outcome, accept, get_proposal, inspect_stored, list_proposals, reject
from sediment.review.decisions import STATUSES
from sediment.store import HUMAN_WRITABLE, LayerName


def reviewer_option(f: Any) -> Any:
    return click.option("--reviewer", default=None, envvar="SEDIMENT_REVIEWER",
                        help="Name recorded as the reviewer in each decision (env "
                             "SEDIMENT_REVIEWER; default: SEDIMENT_ACTOR, else the OS "
                             "user).")(f)


def reviewer_name(given: str | None) -> str:
    """The reviewer a CLI decision records: ``--reviewer``, else the actor the other
    commands act as (``SEDIMENT_ACTOR``, else the OS user). Declared, not proven."""
    from sediment.cli._options import own_actor
    from sediment.server.web import clean_name

    name = clean_name(given) if given is not None else own_actor()
    if name is None:
        raise ValidationError(f"--reviewer {given!r}: give 1 to 64 printable characters")
    return name


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
@click.option("--status", type=click.Choice(["all", *STATUSES]),
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
        by = f"  by {visible(v.actor)}" if v.actor else ""
        for line in entry(f"proposal {v.proposal_id}  {visible(str(v.status))}  chunk "
                          f"{v.context_id}{by}  " + (f"{visible(c.kind)}  confidence "
                                                 f"{c.confidence:.2f}" if c else "(missing)"),
                          c.content if c else None):
            click.echo(line)


@proposals.command(name="show")
@click.argument("proposal_id", type=CHUNK_ID)
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Directory path:line sources are read from (default: the current one).")
@store_layer_options
@json_option
@click.pass_context
def proposals_show(ctx: click.Context, /, proposal_id: int, root: Path | None, as_json: bool,
                   store: str | None, layer_dir: Path | None, **paths: Path | None) -> None:
    """One proposal: its status, decisions, the chunk with its provenance and events."""
    ls = open_store(get_config(ctx), store, layer_dir, paths)
    view = get_proposal(ls, proposal_id)
    holder = next((n for n in (LayerName.DELTA, LayerName.LOCAL)
                   if ls.chunk(n, view.context_id) is not None), None)
    cfg = get_config(ctx)
    report = (inspect_stored(ls, holder, view.context_id, viewer=None,
                             lines=source_lines(cfg, root or Path.cwd()))
              if holder is not None else None)
    if as_json:
        emit_json({**view.to_dict(), "inspection": report.to_dict() if report else None})
        return
    by = f" by {visible(view.actor)}" if view.actor else ""
    click.echo(f"proposal {view.proposal_id}: {visible(str(view.status))}, chunk "
               f"{view.context_id} from {visible(str(view.from_layer))}, proposed{by} "
               f"{when(view.proposed_at_ms)}")
    for d in view.decisions:
        click.echo(f"  decision {d.id}: {visible(str(d.verdict))} by {visible(d.decided_by)}, "
                   f"{when(d.created_at_ms)}" + (f" ({visible(d.reason)})" if d.reason else ""))
    if report is not None:
        print_chunk_report(report)
    else:
        click.echo(f"chunk {view.context_id} is no longer in delta or local")


@proposals.command(name="accept")
@click.argument("proposal_ids", nargs=-1, required=True, type=CHUNK_ID)
@click.option("--reason", default="", help="Why (optional; kept in the decision event).")
@reviewer_option
@store_layer_options
@json_option
@click.pass_context
def proposals_accept(ctx: click.Context, /, proposal_ids: tuple[int, ...], reason: str,
                     reviewer: str | None, as_json: bool, store: str | None,
                     layer_dir: Path | None, **paths: Path | None) -> None:
    """Accept proposals: copy each chunk into the user layer (same id, author human) and
    record the decision, with the reviewer's name, in the delta layer. Accepting twice
    changes nothing."""
    name = reviewer_name(reviewer)
    ls = open_store(get_config(ctx), store, layer_dir, paths, writes=HUMAN_WRITABLE)
    echo_outcomes(accept(ls, proposal_ids, reason, reviewer=name), as_json)


@proposals.command(name="reject")
@click.argument("proposal_ids", nargs=-1, required=True, type=CHUNK_ID)
@click.option("--reason", required=True, help="Why the proposal is rejected (required).")
@reviewer_option
@store_layer_options
@json_option
@click.pass_context
def proposals_reject(ctx: click.Context, /, proposal_ids: tuple[int, ...], reason: str,
                     reviewer: str | None, as_json: bool, store: str | None,
                     layer_dir: Path | None, **paths: Path | None) -> None:
    """Reject proposals with a reason; the decision (with the reviewer's name) is an
    event, nothing is deleted."""
    name = reviewer_name(reviewer)
    ls = open_store(get_config(ctx), store, layer_dir, paths, writes=HUMAN_WRITABLE)
    echo_outcomes(reject(ls, proposal_ids, reason, reviewer=name), as_json)



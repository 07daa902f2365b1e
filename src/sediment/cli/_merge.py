"""``sediment merge-driver``: git's merge driver for the append-only layer files
(installed by ``sediment init --git``; docs/git.md)."""

from __future__ import annotations

from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._options import json_option
from sediment.cli._output import emit_json, visible
from sediment.ops.gitmerge import merge_file
from sediment.store.merge import MergeConflict


@cli.command(name="merge-driver")
@click.argument("ancestor", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("ours", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("theirs", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("path")
@json_option
@click.pass_context
def merge_driver(ctx: click.Context, /, ancestor: Path, ours: Path, theirs: Path,
                 path: str, as_json: bool) -> None:
    """Merge git's three versions of a layer file into OURS (git runs this as
    `sediment merge-driver %O %A %B %P`). Exits 1, OURS untouched, on a conflict."""
    try:
        result = merge_file(ancestor, ours, theirs, path)
    except MergeConflict as exc:
        if as_json:
            emit_json({"path": path, "merged": False, "conflict": str(exc)})
            ctx.exit(1)
        click.echo(f"sediment merge-driver: CONFLICT in {visible(path)}: {visible(str(exc))}",
                   err=True)
        ctx.exit(1)
    if as_json:
        emit_json({"path": path, "merged": True, "chunks": result.chunks,
                   "renumbered": {str(k): v for k, v in result.renumbered.items()},
                   "whole_set": result.whole_set})
        return
    moved = (f"; renumbered {len(result.renumbered)} id(s) of one branch"
             if result.renumbered else "")
    scope = "" if result.whole_set else " (this file alone: the other layers were not found)"
    click.echo(f"sediment merge-driver: merged {visible(path)}: {result.chunks} chunks"
               f"{moved}{scope}", err=True)

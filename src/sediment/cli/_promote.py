"""``sediment promote`` and ``sediment compact``: human decisions that move chunks up into
the user layer, and user into a new base (RFC 15.5, 15.6)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._ids import parse_id_list
from sediment.cli._options import (
    get_config,
    json_option,
    layer_options,
    open_layerset,
    open_store,
    store_option,
)
from sediment.cli._output import emit_json, note, snippet, to_stdout, visible
from sediment.cli._proposals import echo_outcomes, reviewer_name, reviewer_option
from sediment.config import store_url
from sediment.errors import ValidationError
from sediment.review import compact, promotable, promote
from sediment.review._common import layer_name_for_file
from sediment.store import HUMAN_WRITABLE, LayerName, LayerStore


def _ids(value: str) -> list[int]:
    try:
        return parse_id_list(value, what="--ids")
    except ValidationError as exc:
        raise click.BadParameter(str(exc), param_hint="--ids") from None


@cli.command(name="promote")
@click.option("--from", "from_path", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="Layer to copy from: the delta layer (default DIR/"
                                 "AGENTS.delta.db), or a local layer named AGENTS.local.db.")
@click.option("--to", "to_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="The user layer to copy into (default DIR/AGENTS.user.db).")
@click.option("--ids", "ids_csv", required=True, help="Comma-separated chunk ids, e.g. 12,15.")
@click.option("--reason", default="", help="Why (kept in the decision events).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (for scripts).")
@click.option("--dir", "layer_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Directory of the other layers (default: the directory of "
                                 "--from, else the project's).")
@click.option("--source", type=click.Choice(["delta", "local"]), default=None,
              help="With --store: the layer to copy from (default delta). Over files the "
                   "--from file's name decides.")
@reviewer_option
@store_option
@json_option
@click.pass_context
def promote_cmd(ctx: click.Context, /, from_path: Path | None, to_path: Path | None,
                ids_csv: str, reason: str, yes: bool, layer_dir: Path | None,
                source: str | None, reviewer: str | None, store: str | None,
                as_json: bool) -> None:
    """Copy chunks into the user layer without a proposal (RFC 15.5); each copy keeps its
    id, becomes author human, and is recorded as a decision in the delta layer, with the
    reviewer's name."""
    ids = _ids(ids_csv)
    name = reviewer_name(reviewer)
    cfg = get_config(ctx)
    if store is not None or (from_path is None and to_path is None and layer_dir is None
                             and store_url(cfg, None) is not None):
        if from_path is not None or to_path is not None:
            raise click.UsageError("--store and --from/--to name two stores; give one (over "
                                   "a store, --source names the layer to copy from)")
        src = LayerName(source or "delta")
        ls: LayerStore = open_store(cfg, store, layer_dir, {}, writes=HUMAN_WRITABLE)
        target = ls.location(LayerName.USER)
    else:
        directory = layer_dir or (from_path.parent if from_path else None)
        src = LayerName.LOCAL if from_path is not None and \
            layer_name_for_file(from_path.name) is LayerName.LOCAL else LayerName.DELTA
        if source is not None and LayerName(source) is not src:
            raise click.UsageError("--source is for --store; over files, --from names the "
                                   "layer (AGENTS.local.db for local)")
        files = open_layerset(cfg, directory, {f"{src.value}_path": from_path,
                                               "user_path": to_path}, HUMAN_WRITABLE)
        ls, target = files, str(files.paths[LayerName.USER])
    chunks = promotable(ls, ids, src)
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError("promote writes to the user layer and asks for confirmation"
                                   "; stdin is not a terminal, so pass --yes to proceed")
        for c in chunks:
            click.echo(f"  {c.id} [{visible(c.kind)}] {snippet(c.content, 100)}", err=True)
        click.confirm(f"Promote {len(chunks)} chunk(s) into {target}?", abort=True, err=True)
    echo_outcomes(promote(ls, ids, source=src, reason=reason, reviewer=name), as_json)


# -- compact ---------------------------------------------------------------------------------
@cli.command(name="compact")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              required=True, help="The new base layer to write (never one of the inputs; "
                                  "'-' for stdout).")
@click.option("--keep-events", is_flag=True,
              help="Keep meta.* event chunks (and the chunks they supersede or forget).")
@click.option("--rotate", is_flag=True,
              help="Then install the new base in place of the old one and archive user "
                   "and delta to dated files, resetting them to empty layers that keep the "
                   "profile and id high-water mark (safe to interrupt and to run again).")
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
@layer_options
@json_option
@click.pass_context
def compact_cmd(ctx: click.Context, /, out: Path, keep_events: bool, rotate: bool, force: bool,
                as_json: bool, layer_dir: Path | None, **paths: Path | None) -> None:
    """Merge base and user into a new immutable base (RFC 15.6): user wins by id, vectors
    are copied, the bytes are deterministic. Move it over AGENTS.db yourself, or let
    --rotate install it."""
    stdout = to_stdout(out, as_json, "compaction")
    ls = open_layerset(get_config(ctx), layer_dir, paths)
    report = compact(ls.paths[LayerName.BASE], ls.paths[LayerName.USER], out,
                     keep_events=keep_events, force=force, rotate=rotate,
                     delta=ls.paths.get(LayerName.DELTA))
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(f"wrote {visible(str(report.out))}: {report.chunks} chunks ({report.from_base} "
               f"from base, {report.from_user} from user, {report.overridden} overridden), "
               f"{report.events_dropped} events dropped, {report.bytes} bytes, sha256 "
               f"{report.sha256[:16]}, id high-water {report.id_high_water}", err=stdout)
    if report.requantized:
        note(f"warning: {report.requantized} int8 vectors were re-quantised to the base's "
             "scale")
    for r in report.rotated:
        if r.installed:
            click.echo(f"installed the new base as {visible(r.layer)}; the old one "
                       f"({r.chunks} chunks) is kept as {visible(r.archive)}", err=stdout)
            continue
        click.echo(f"archived {visible(r.layer)} ({r.chunks} chunks) to {visible(r.archive)}; "
                   "reset it empty", err=stdout)
    if report.pending_archived:
        note(f"note: {report.pending_archived} pending proposal(s) went to the delta archive")



"""``sediment export`` and ``sediment import``: a layer as JSON Lines and back."""

from __future__ import annotations

from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._options import get_config, json_option, open_for_writing, open_layerset
from sediment.cli._output import emit_json, visible
from sediment.errors import ValidationError
from sediment.review import export_lines, import_file
from sediment.review._common import layer_name_for_file
from sediment.store import LayerName
from sediment.store.atomic import write_output

_WRITABLE = [n.value for n in (LayerName.USER, LayerName.DELTA, LayerName.LOCAL)]


@cli.command(name="export")
@click.argument("layer", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              required=True, help="JSON Lines file to write ('-' for stdout).")
@json_option
def export_cmd(layer: Path, out: Path, as_json: bool) -> None:
    """Write a layer as JSON Lines: a header line, then one chunk per line with its vector."""
    if str(out) == "-":
        if as_json:
            raise click.UsageError("--json reports on the export; it cannot share stdout "
                                   "with --out -")
        for line in export_lines(layer):
            click.echo(line)
        return
    lines = list(export_lines(layer))
    write_output(out, "".join(line + "\n" for line in lines).encode("utf-8"))
    if as_json:
        emit_json({"layer": str(layer), "out": str(out), "chunks": len(lines) - 1})
    else:
        click.echo(f"exported {len(lines) - 1} chunks from {visible(str(layer))} to "
                   f"{visible(str(out))}")


@cli.command(name="import")
@click.argument("source", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--into", "into", required=True,
              help="Layer to append to: user, delta or local (in --dir), or a layer file.")
@click.option("--scope", type=click.Choice(_WRITABLE), default=None,
              help="Which layer --into FILE is, when its name is not a standard one.")
@click.option("--dir", "layer_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Directory of the layer set (default: --into's directory, "
                                 "else the project's).")
@click.option("--fresh-ids", is_flag=True,
              help="Give every chunk a new id (for layers whose ids another tool chose).")
@json_option
@click.pass_context
def import_cmd(ctx: click.Context, /, source: Path, into: str, scope: str | None,
               layer_dir: Path | None, fresh_ids: bool, as_json: bool) -> None:
    """Append the chunks of a JSON Lines export to a layer, ids and vectors unchanged.

    Every line is checked first; the first bad one is reported by number and nothing is
    written. Base is never written; importing into user is a human decision, like this one.
    """
    cfg = get_config(ctx)
    if into.lower() in {n.value for n in LayerName}:
        target = LayerName.parse(into)
        ls = open_layerset(cfg, layer_dir)
    else:
        path = Path(into)
        named = LayerName.parse(scope) if scope else layer_name_for_file(path.name)
        if named is None:
            raise click.UsageError(f"{path.name} is not a standard layer file name; say which "
                                   "layer it is with --scope user|delta|local")
        target = named
        ls = open_for_writing(cfg, layer_dir or path.parent, (target,),
                           **{f"{target.value}_path": path})
    if target is LayerName.BASE:
        raise ValidationError("cannot import into the base layer: AGENTS.db is immutable "
                              "(RFC 6.1); import into user, delta or local")
    report = import_file(ls, target, source, fresh_ids=fresh_ids)
    if as_json:
        emit_json(report.to_dict())
    else:
        extra = f" ({len(report.overrides)} override other layers)" if report.overrides else ""
        click.echo(f"imported {report.chunks} chunks into the {report.layer} layer "
                   f"({report.path}){extra}")

"""``sediment export`` and ``sediment import``: a layer as JSON Lines and back, and (with
``--to`` / ``--from``) memories in peers' formats (``sediment.interop``,
docs/import-export.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from sediment.cli._app import cli
from sediment.cli._options import (
    embedder_option,
    get_config,
    json_option,
    open_layerset,
    own_actor,
)
from sediment.cli._output import emit_json, note, to_stdout, visible
from sediment.errors import ValidationError
from sediment.review import export_lines, import_file
from sediment.review._common import layer_name_for_file
from sediment.store import LayerName
from sediment.store.atomic import write_output

_WRITABLE = [n.value for n in (LayerName.USER, LayerName.DELTA, LayerName.LOCAL)]
MEMORY_SCOPES = ["user", "project", "global"]
FORMATS = ("agents-md", "basic-memory", "claude", "cline", "copilot", "cursor", "mcp-memory",
           "mem0")
"""``sediment.interop.FORMATS`` (named here so the command's help does not load it)."""
_CATEGORIES = ("preference", "pattern", "correction", "fact", "instruction", "convention")


def _memory_options(f: Any) -> Any:
    for deco in (
        click.option("--actor", default=None, envvar="SEDIMENT_ACTOR",
                     help="Act as this actor (default: the OS user; env SEDIMENT_ACTOR)."),
        click.option("--store", "store", metavar="URL", default=None,
                     help="A PostgreSQL store's memories instead of the layer files."),
        embedder_option,
    ):
        f = deco(f)
    return f


@cli.command(name="export")
@click.argument("layer", type=click.Path(path_type=Path, dir_okay=False), required=False)
@click.option("--to", "to_format", type=click.Choice(["jsonl", *FORMATS]), default=None,
              help="Write memories in a peer's format instead of a LAYER as JSON Lines "
                   "(see docs/import-export.md).")
@click.option("--out", type=click.Path(path_type=Path, allow_dash=True),
              required=True, help="File to write ('-' for stdout); a directory for the "
                                   "formats that write several files.")
@click.option("--scope", type=click.Choice([*MEMORY_SCOPES, "all"]), default=None,
              help="With --to: only this scope's memories, or all (default: the scope an "
                   "import of the format writes to: project for instruction files, else "
                   "user).")
@click.option("--category", type=click.Choice(_CATEGORIES), default=None,
              help="With --to: only memories of this category.")
@click.option("--dir", "layer_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="With --to: directory of the layer set (default: the "
                                 "project's).")
@_memory_options
@json_option
@click.pass_context
def export_cmd(ctx: click.Context, /, layer: Path | None, to_format: str | None, out: Path,
               scope: str | None, category: str | None, layer_dir: Path | None,
               actor: str | None, store: str | None, embedder_name: str | None,
               as_json: bool) -> None:
    """Write a layer as JSON Lines: a header line, then one chunk per line with its vector.

    With --to FORMAT, write the memories of --actor (repeat it with commas for several:
    --actor a,b) in that format instead, so nothing is locked in here."""
    if to_format is not None and to_format != "jsonl":
        if layer is not None:
            raise click.UsageError("--to writes memories, not a layer: leave out LAYER")
        _export_format(ctx, to_format, out, scope, category, layer_dir, actor, store,
                       embedder_name, as_json)
        return
    if layer is None:
        raise click.UsageError("give the LAYER file to export (or --to FORMAT for memories)")
    if any(v is not None for v in (scope, category, layer_dir, actor, store)):
        raise click.UsageError("--scope, --category, --dir, --actor and --store go with "
                               "--to FORMAT")
    if to_stdout(out, as_json, "export"):
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
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--from", "from_format", type=click.Choice(["jsonl", *FORMATS]), default=None,
              help="Read SOURCE in a peer's format as memories (see docs/import-export.md) "
                   "instead of a JSON Lines layer export.")
@click.option("--into", "into", default=None,
              help="Layer to append to: user, delta or local (in --dir), or a layer file.")
@click.option("--scope", type=click.Choice([*_WRITABLE, "project", "global"]), default=None,
              help="Which layer --into FILE is, when its name is not a standard one; with "
                   "--from, the memories' scope: user, project or global (default: project "
                   "for instruction files, else user).")
@click.option("--dir", "layer_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Directory of the layer set (default: --into's directory, "
                                 "else the project's).")
@click.option("--fresh-ids", is_flag=True,
              help="Give every chunk a new id (for layers whose ids another tool chose).")
@click.option("--dry-run", is_flag=True,
              help="With --from: print what would be written, and what is already there; "
                   "write nothing.")
@_memory_options
@json_option
@click.pass_context
def import_cmd(ctx: click.Context, /, source: Path, from_format: str | None, into: str | None,
               scope: str | None, layer_dir: Path | None, fresh_ids: bool, dry_run: bool,
               actor: str | None, store: str | None, embedder_name: str | None,
               as_json: bool) -> None:
    """Append the chunks of a JSON Lines export to a layer, ids and vectors unchanged.

    Every line is checked first; the first bad one is reported by number and nothing is
    written. Base is never written; importing into user is a human decision, like this one.

    With --from FORMAT, SOURCE (a file or a directory) is read as memories of --actor in
    --scope, each with its 'path:line'; what is already stored is not written again.
    """
    if from_format is not None and from_format != "jsonl":
        if into is not None or fresh_ids:
            raise click.UsageError("--into and --fresh-ids are for JSON Lines layer exports; "
                                   "--from imports memories (choose them with --scope)")
        if scope in ("delta", "local"):
            raise click.UsageError("with --from, --scope is a memory scope: user, project "
                                   "or global")
        _import_format(ctx, from_format, source, scope, layer_dir, dry_run, actor, store,
                       embedder_name, as_json)
        return
    if into is None:
        raise click.UsageError("Missing option '--into' (or give --from FORMAT)")
    if any(v is not None for v in (actor, store)) or dry_run:
        raise click.UsageError("--actor, --store and --dry-run go with --from FORMAT")
    if scope in ("project", "global"):
        raise click.UsageError(f"--scope {scope} is a memory scope; give --from FORMAT, or "
                               "name the layer: user, delta or local")
    if source.is_dir():
        raise click.UsageError(f"{source} is a directory; a JSON Lines export is a file")
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
        ls = open_layerset(cfg, layer_dir or path.parent, {f"{target.value}_path": path},
                           (target,))
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


def _import_format(ctx: click.Context, fmt: str, source: Path, scope: str | None,
                   layer_dir: Path | None, dry_run: bool, actor: str | None,
                   store: str | None, embedder_name: str | None, as_json: bool) -> None:
    from sediment.cli._workspace import open_workspace
    from sediment.interop import FORMATS as KNOWN
    from sediment.interop import run_import

    if not source.exists():
        raise click.BadParameter(f"{source} does not exist", param_hint="SOURCE")
    spec = KNOWN[fmt]
    where = scope or spec.default_scope
    items: list[dict[str, Any]] = []

    def show(row: dict[str, Any]) -> None:
        if as_json:
            if dry_run:
                items.append(row)
            return
        if dry_run:
            label = "new   " if row["status"] == "new" else f"exists {row['id']}"
            click.echo(f"{label} [{row['category']}] {visible(row['source'])} "
                       f"{visible(row['content'])}")

    with open_workspace(get_config(ctx), store, layer_dir, embedder_name) as ws:
        report = run_import(ws.memory, fmt, spec.read, source, actor=actor or own_actor(),
                            scope=where, dry_run=dry_run, on_item=show)
    if as_json:
        out = report.to_dict()
        if dry_run:
            out["items"] = items
        emit_json(out)
        return
    for remark in report.notes:
        note(f"note: {remark}")
    who = ", ".join(sorted(report.actors)) or (actor or own_actor())
    if dry_run:
        click.echo(f"dry run: would save {_memories(report.new)} ({report.existing} "
                   f"already stored) as {visible(who)} in {where} scope; nothing was written")
    else:
        click.echo(f"imported {_memories(report.created)} from {visible(str(source))} as "
                   f"{visible(who)} into {where} scope ({report.existing} already stored)")


def _memories(n: int) -> str:
    return f"{n} memor{'y' if n == 1 else 'ies'}"


def _export_format(ctx: click.Context, fmt: str, out: Path, scope: str | None,
                   category: str | None, layer_dir: Path | None, actor: str | None,
                   store: str | None, embedder_name: str | None, as_json: bool) -> None:
    from sediment.cli._workspace import open_workspace
    from sediment.interop import FORMATS as KNOWN
    from sediment.interop import gather, write_tree

    spec = KNOWN[fmt]
    actors = [a.strip() for a in (actor or own_actor()).split(",") if a.strip()]
    chosen = None if scope == "all" else (scope or spec.default_scope)
    with open_workspace(get_config(ctx), store, layer_dir, embedder_name) as ws:
        memories = gather(ws.memory, actors, chosen, category)
    written = spec.write(memories)
    if isinstance(written, dict):
        if str(out) == "-":
            raise click.UsageError(f"--to {fmt} writes a directory of files; give --out DIR")
        files = write_tree(out, written)
    else:
        to_stdout(out, as_json, "export")
        write_output(out, written)
        files = [str(out)]
    if as_json:
        emit_json({"format": fmt, "out": str(out), "memories": len(memories),
                   "actors": actors, "scope": chosen or "all", "files": files})
    elif str(out) != "-":
        click.echo(f"exported {_memories(len(memories))} as {fmt} to {visible(str(out))} "
                   f"({len(files)} file{'s' if len(files) != 1 else ''})")

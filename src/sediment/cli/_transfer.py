"""``sediment push`` and ``sediment pull``: move layers between files and a PostgreSQL store."""

from __future__ import annotations

from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._options import get_config, json_option, store_option
from sediment.cli._output import emit_json, visible
from sediment.config import store_url
from sediment.errors import ConfigError, NotFoundError
from sediment.pg import PgStore, parse_store_url, pull, push
from sediment.store import LayerSet


def _store(option: str | None, project: str | None) -> PgStore:
    url = store_url(get_config(click.get_current_context()), option)
    if url is None:
        raise ConfigError("no store: give --store postgresql://host/database[?project=NAME], "
                          "set SEDIMENT_STORE, or put store = \"postgresql://...\" in "
                          "sediment.toml")
    return PgStore(parse_store_url(url, project), statement_timeout_ms=0)


def _directory(layer_dir: Path | None) -> Path:
    directory = layer_dir or get_config(click.get_current_context()).layer_dir
    if not directory.is_dir():
        raise NotFoundError(f"--dir {directory}: no such directory")
    return directory


project_option = click.option(
    "--project", default=None,
    help="The project (namespace) on the server (default: the URL's ?project=, else "
         "'default').")


@cli.command(name="push")
@store_option
@project_option
@click.option("--dir", "layer_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Directory holding the layer files (default: the project "
                                 "root, or SEDIMENT_DIR).")
@click.option("--replace-base", is_flag=True,
              help="Replace the project's base with this directory's AGENTS.db (a new "
                   "compiled base; for reviewers).")
@json_option
def push_cmd(store: str | None, project: str | None, layer_dir: Path | None,
             replace_base: bool, as_json: bool) -> None:
    """Upload the layer files into a project: ids, authors, times, vectors and events are
    kept. A project that has chunks only gains new ids (identical chunks are skipped,
    different ones under a used id refused); its base is replaced only with
    --replace-base."""
    directory = _directory(layer_dir)
    with _store(store, project) as target:
        done = push(target, LayerSet.from_directory(directory), replace_base=replace_base)
        name = target.project
    if as_json:
        emit_json({"project": name, **done.to_dict()})
        return
    for layer, n in done.layers.items():
        skipped = done.skipped.get(layer, 0)
        click.echo(f"{layer:<6} {n} chunks pushed" + (f", {skipped} already there"
                                                      if skipped else ""))
    click.echo(f"pushed {visible(str(directory))} into project {visible(name)}")


@cli.command(name="pull")
@store_option
@project_option
@click.option("--dir", "layer_dir", type=click.Path(path_type=Path, file_okay=False),
              required=True, help="Directory to write the layer files into.")
@click.option("--force", is_flag=True, help="Overwrite layer files that exist.")
@json_option
def pull_cmd(store: str | None, project: str | None, layer_dir: Path, force: bool,
             as_json: bool) -> None:
    """Write a project's layers as layer files (AGENTS.db, AGENTS.user.db, ...) that
    `sediment validate` accepts and that search as the server does."""
    directory = _directory(layer_dir)
    with _store(store, project) as source:
        done = pull(source, directory, force=force)
        name = source.project
    if as_json:
        emit_json({"project": name, **done.to_dict()})
        return
    for path, (layer, n) in zip(done.files, done.layers.items(), strict=True):
        click.echo(f"{layer:<6} {n} chunks -> {visible(path)}")
    click.echo(f"pulled project {visible(name)}")

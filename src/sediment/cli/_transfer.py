"""``sediment push`` and ``sediment pull``: move layers between files and a PostgreSQL store."""

from __future__ import annotations

from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._options import get_config, json_option, store_option
from sediment.cli._output import emit_json, visible
from sediment.config import store_url
from sediment.errors import ConfigError, NotFoundError
from sediment.pg import PgStore, Transfer, parse_store_url, pull, push
from sediment.pg.memory_transfer import USER_LAYERS, pull_actor
from sediment.server.principals import data_dir, default_actor
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


def _actor_files(actor: str | None) -> tuple[str, LayerSet]:
    """The actor (``--actor``, SEDIMENT_ACTOR, the OS user) and their own memory files."""
    from sediment.memory import FileMemoryStore

    who = actor or default_actor()
    files = FileMemoryStore(LayerSet({}), data_dir(), profile=None, dim=0)
    return who, files.actor_set(who)


user_memories_option = click.option(
    "--user-memories", is_flag=True,
    help="Also move your own memories (user scope, kept in the data directory; they follow "
         "you across projects): only those of --actor, and only when asked.")
actor_option = click.option(
    "--actor", default=None, envvar="SEDIMENT_ACTOR",
    help="Whose own memories --user-memories moves (default: the OS user; env "
         "SEDIMENT_ACTOR).")


def _memories(done: Transfer, actor: str | None) -> None:
    click.echo(f"memory rows: {done.memories.get('project', 0)} of the project"
               + (f", {done.memories.get('user', 0)} of {visible(actor)}'s own" if actor
                  else ""))


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
@user_memories_option
@actor_option
@json_option
def push_cmd(store: str | None, project: str | None, layer_dir: Path | None,
             replace_base: bool, user_memories: bool, actor: str | None,
             as_json: bool) -> None:
    """Upload the layer files into a project: ids, authors, times, vectors and events are
    kept, and the project's memories become the server's memory rows. A project that has
    chunks only gains new ids (identical chunks are skipped, different ones under a used id
    refused); its base is replaced only with --replace-base."""
    directory = _directory(layer_dir)
    own = _actor_files(actor) if user_memories else None
    with _store(store, project) as target:
        done = push(target, LayerSet.from_directory(directory), replace_base=replace_base,
                    actor_files=own)
        name = target.project
    if as_json:
        emit_json({"project": name, **done.to_dict()})
        return
    for layer, n in done.layers.items():
        skipped = done.skipped.get(layer, 0)
        click.echo(f"{layer:<6} {n} chunks pushed" + (f", {skipped} already there"
                                                      if skipped else ""))
    _memories(done, own[0] if own else None)
    click.echo(f"pushed {visible(str(directory))} into project {visible(name)}")


@cli.command(name="pull")
@store_option
@project_option
@click.option("--dir", "layer_dir", type=click.Path(path_type=Path, file_okay=False),
              required=True, help="Directory to write the layer files into.")
@click.option("--force", is_flag=True, help="Overwrite layer files that exist.")
@user_memories_option
@actor_option
@json_option
def pull_cmd(store: str | None, project: str | None, layer_dir: Path, force: bool,
             user_memories: bool, actor: str | None, as_json: bool) -> None:
    """Write a project's layers as layer files (AGENTS.db, AGENTS.user.db, ...) that
    `sediment validate` accepts and that search as the server does; the project's memories
    go back into the layers that hold them on files."""
    directory = _directory(layer_dir)
    with _store(store, project) as source:
        done = pull(source, directory, force=force)
        if user_memories:
            who, own = _actor_files(actor)
            schema = source.schema()
            done.memories["user"] = pull_actor(
                source, who, {n: own.paths[n] for n in USER_LAYERS if n in own.paths},
                dim=schema.dim if schema is not None else 0,
                profile=schema.profile if schema is not None else None, force=force)
        name = source.project
    if as_json:
        emit_json({"project": name, **done.to_dict()})
        return
    for path, (layer, n) in zip(done.files, done.layers.items(), strict=True):
        click.echo(f"{layer:<6} {n} chunks -> {visible(path)}")
    _memories(done, (actor or default_actor()) if user_memories else None)
    click.echo(f"pulled project {visible(name)}")

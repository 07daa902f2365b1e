"""``sediment push`` and ``sediment pull``: move layers between files and a PostgreSQL store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sediment.cli._app import cli
from sediment.cli._options import get_config, json_option, own_actor, store_option
from sediment.cli._output import emit_json, visible
from sediment.config import data_dir, store_url
from sediment.errors import ConfigError, NotFoundError, PermissionDeniedError
from sediment.pg import PgStore, Transfer, parse_store_url, pull, push
from sediment.store import LayerSet

if TYPE_CHECKING:
    from sediment.context import FileContextStore


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

    who = actor or own_actor()
    where = data_dir(get_config(click.get_current_context()).env)
    files = FileMemoryStore(LayerSet({}), where, profile=None, dim=0)
    return who, files.actor_set(who)


user_memories_option = click.option(
    "--user-memories", is_flag=True,
    help="Also move your own memories (user scope, kept in the data directory; they follow "
         "you across projects): only those of --actor, and only when asked.")
actor_option = click.option(
    "--actor", default=None, envvar="SEDIMENT_ACTOR",
    help="Whose own memories --user-memories moves, and whose context --context moves "
         "(default: the OS user; env SEDIMENT_ACTOR).")
context_option = click.option(
    "--context", "with_context", is_flag=True,
    help="Also move the directory's progressive context store (its items, events and "
         "archives): on the server it is --actor's context, with new ids.")


def _context_store(directory: Path, profile: dict[str, Any] | None, dim: int
                   ) -> FileContextStore:
    """The context store ``sediment context`` uses for ``directory`` (its settings'
    persistence and path; session stores by SEDIMENT_CONTEXT_SESSION)."""
    from sediment.context import FileContextStore, resolve
    from sediment.context.place import context_dir

    cfg = get_config(click.get_current_context())
    settings, _ = resolve(cfg.context)
    where = context_dir(settings, directory, data_dir(cfg.env), cfg.env.context_session)
    return FileContextStore(where, profile=profile, dim=dim)


def _push_context(target: PgStore, directory: Path, actor: str, *, check_only: bool) -> int:
    """Check (``check_only``) or push the directory's context store as ``actor``'s, over
    the store's own pool (one per process, as every other path)."""
    from sediment.format.profile import check_compatible
    from sediment.pg.context_transfer import CONTEXT, push_context

    stored = _context_store(directory, None, 0).stored_schema()
    if stored is None:
        return 0
    files = _context_store(directory, stored[1], stored[0])
    schema = target.schema()
    if schema is not None and files.profile is not None and schema.profile is not None:
        check_compatible(files.profile, schema.profile, a_name=f"the context store in "
                         f"{files.directory}", b_name=f"project {target.project}",
                         consequence="its items could not be searched with the server's "
                                     "embedder")
    if not check_only:
        return push_context(target.db, actor, files.parts(), schema.dim if schema else 0)
    with target.db.connection() as conn:
        CONTEXT.refuse_twice(conn, target.project, actor)
    return 0


def _pull_context(source: PgStore, directory: Path, actor: str, force: bool
                  ) -> Callable[[], int]:
    """Read ``actor``'s context from the server (refusing an existing store unless
    ``force``); the returned step writes it into the directory's store."""
    from sediment.pg.context_transfer import pull_context

    schema = source.schema()
    if schema is None or not schema.dim:
        raise NotFoundError(f"project {source.project} has no layers with vectors, so "
                            "its context's embedder is unknown: nothing to pull it with")
    files = _context_store(directory, schema.profile, schema.dim)
    if not files.is_empty() and not force:
        raise PermissionDeniedError(f"{files.directory} already holds a context store; "
                                    "pass --force to replace it")
    parts = pull_context(source.db, actor, schema.dim)

    def write() -> int:
        files.replace(parts)
        return sum(len(p.chunks) for p in parts)
    return write


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
@context_option
@actor_option
@json_option
def push_cmd(store: str | None, project: str | None, layer_dir: Path | None,
             replace_base: bool, user_memories: bool, with_context: bool, actor: str | None,
             as_json: bool) -> None:
    """Upload the layer files into a project: ids, authors, times, vectors and events are
    kept, and the project's memories become the server's memory rows. A project that has
    chunks only gains new ids (identical chunks are skipped, different ones under a used id
    refused); its base is replaced only with --replace-base."""
    directory = _directory(layer_dir)
    own = _actor_files(actor) if user_memories else None
    who = actor or own_actor()
    with _store(store, project) as target:
        if with_context:
            _push_context(target, directory, who, check_only=True)
        done = push(target, LayerSet.from_directory(directory), replace_base=replace_base,
                    actor_files=own)
        if with_context:
            done.context = _push_context(target, directory, who, check_only=False)
        name = target.project
    if as_json:
        emit_json({"project": name, **done.to_dict()})
        return
    for layer, n in done.layers.items():
        skipped = done.skipped.get(layer, 0)
        click.echo(f"{layer:<6} {n} chunks pushed" + (f", {skipped} already there"
                                                      if skipped else ""))
    _memories(done, own[0] if own else None)
    if with_context:
        click.echo(f"context rows: {done.context} as {visible(who)}'s")
    click.echo(f"pushed {visible(str(directory))} into project {visible(name)}")


@cli.command(name="pull")
@store_option
@project_option
@click.option("--dir", "layer_dir", type=click.Path(path_type=Path, file_okay=False),
              required=True, help="Directory to write the layer files into.")
@click.option("--force", is_flag=True, help="Overwrite layer files that exist.")
@user_memories_option
@context_option
@actor_option
@json_option
def pull_cmd(store: str | None, project: str | None, layer_dir: Path, force: bool,
             user_memories: bool, with_context: bool, actor: str | None,
             as_json: bool) -> None:
    """Write a project's layers as layer files (AGENTS.db, AGENTS.user.db, ...) that
    `sediment validate` accepts and that search as the server does; the project's memories
    go back into the layers that hold them on files."""
    directory = _directory(layer_dir)
    who = actor or own_actor()
    with _store(store, project) as source:
        source.require_project()
        write_context = _pull_context(source, directory, who, force) if with_context else None
        done = pull(source, directory, force=force,
                    actor_files=_actor_files(actor) if user_memories else None)
        if write_context is not None:
            done.context = write_context()
        name = source.project
    if as_json:
        emit_json({"project": name, **done.to_dict()})
        return
    for path, (layer, n) in zip(done.files, done.layers.items(), strict=True):
        click.echo(f"{layer:<6} {n} chunks -> {visible(path)}")
    _memories(done, who if user_memories else None)
    if with_context:
        click.echo(f"context rows: {done.context} of {visible(who)}")
    click.echo(f"pulled project {visible(name)}")

"""The workspace a ``sediment memory`` or ``sediment context`` command works in: the layer
files, or with ``--store URL`` a PostgreSQL store's project (cli/_team.py says how the
choice is made)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import click

from sediment.cli._options import build_embedder, get_config, open_layerset, open_store, team_url
from sediment.cli._output import emit_json
from sediment.cli._team import POOL_SIZE, open_database
from sediment.config import Config, places, process_actor
from sediment.context import resolve
from sediment.store import LayerName
from sediment.workspace import Workspace

Answer = dict[str, Any]
_LAYER_PATHS = tuple(f"{n.value}_path" for n in LayerName)


@contextmanager
def open_workspace(cfg: Config, store: str | None, layer_dir: Path | None,
                   embedder_name: str | None, paths: Mapping[str, Path | None] | None = None
                   ) -> Iterator[Workspace]:
    """The workspace of the command's store; what it built is flushed and closed when the
    command ends. Over files, context lives in the session ``SEDIMENT_CONTEXT_SESSION``
    (default ``cli``)."""
    paths = dict(paths or {})
    settings = resolve(cfg.context)[0]
    url = team_url(cfg, store, layer_dir, paths)
    with ExitStack() as stack:
        if url is not None:
            database, layers = open_database(url, size=POOL_SIZE)
            stack.callback(database.close)
            ws = Workspace.over_database(database, build_embedder(cfg, embedder_name,
                                                                  layerset=layers),
                                         places(cfg.env, settings))
        else:
            ws = Workspace.over_files(open_layerset(cfg, layer_dir, paths),
                                      build_embedder(cfg, embedder_name),
                                      places(cfg.env, settings, cfg.env.context_session),
                                      root=layer_dir or cfg.layer_dir)
        stack.callback(ws.close)
        yield ws


def open_served(cfg: Config, store: str | None, layer_dir: Path | None,
                paths: Mapping[str, Path | None], embedder_name: str | None,
                root: Path | None) -> Workspace:
    """The workspace ``sediment serve`` and ``sediment ui`` serve: the store the options
    name, its embedder, and (over a team database) the database's memories, context and
    tokens. The caller closes it at shutdown (``on_shutdown(ws.close)`` once the server is
    built, so the memory tools flush their use counts before the database closes)."""
    settings = places(cfg.env, resolve(cfg.context)[0])
    url = team_url(cfg, store, layer_dir, paths)
    if url is None:
        opened = open_store(cfg, store, layer_dir, paths)
        opened.schema()
        files = opened.layer_files()
        assert files is not None  # no URL: open_store opened the layer files
        return Workspace.over_files(files, build_embedder(cfg, embedder_name, layerset=files),
                                    settings, root=root or layer_dir or cfg.root)
    database, layers = open_database(url)
    try:
        layers.schema()
        embedder = build_embedder(cfg, embedder_name, layerset=layers)
    except BaseException:
        database.close()
        raise
    return Workspace.over_database(database, embedder, settings, store=layers)


def service_command(service: Callable[[Workspace, str], Any],
                    options: Callable[[Callable[..., None]], Callable[..., None]],
                    text: Callable[[Answer], None]
                    ) -> Callable[[Callable[..., Answer]], Callable[..., None]]:
    """A ``memory`` or ``context`` command: ``options`` (the store, ``--dir``, the
    embedder, ``--actor``, ``--json``, per-layer paths when it takes them) become the
    command's workspace, the service ``service`` picks from it for the actor, and the
    actor; the command returns the service's answer, which ``--json`` prints as JSON and
    ``text`` otherwise, once the workspace is closed (so pending use counts are written)."""

    def decorate(f: Callable[..., Answer]) -> Callable[..., None]:
        @functools.wraps(f)
        def run(ctx: click.Context, /, *args: Any, actor: str | None,
                embedder_name: str | None, store: str | None, layer_dir: Path | None,
                as_json: bool, **kwargs: Any) -> None:
            paths = {k: kwargs.pop(k) for k in _LAYER_PATHS if k in kwargs}
            cfg = get_config(ctx)
            who = actor or process_actor(cfg.env)
            with open_workspace(cfg, store, layer_dir, embedder_name, paths) as ws:
                out = f(service(ws, who), who, *args, **kwargs)
            if as_json:
                emit_json(out)
            else:
                text(out)

        return options(run)

    return decorate

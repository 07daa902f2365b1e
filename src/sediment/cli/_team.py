"""The team server's database for ``sediment memory`` and ``sediment context``.

Both command groups work on the layer files, or with ``--store URL`` (SEDIMENT_STORE,
sediment.toml's ``store``) on a PostgreSQL store's memories and context. The choice follows
:func:`~sediment.cli._options.open_store`: ``--store`` with ``--dir`` is a usage error, and a
configured store applies when no layer directory or file is named.

A command run against the database connects with the database login, which can read every
row anyway: like ``push`` it is an administrator's tool, and ``--actor`` picks whose memories
and context it works on (isolation between actors holds for the clients of ``sediment
serve``, each bound to its token's actor).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sediment.cli._options import build_embedder
from sediment.config import Config, store_url
from sediment.embed import Embedder

if TYPE_CHECKING:
    from sediment.pg.database import Database
    from sediment.pg.store import PgStore

POOL_SIZE = 2


def team_url(cfg: Config, store: str | None, layer_dir: Path | None,
             paths: Mapping[str, Path | None]) -> str | None:
    """The store URL a command works on, or None for the layer files."""
    explicit_files = layer_dir is not None or any(v is not None for v in paths.values())
    if store is not None and explicit_files:
        raise click.UsageError("--store and --dir (or a layer path) name two stores; give one")
    return store_url(cfg, store) if store is not None or not explicit_files else None


@dataclass(frozen=True, slots=True)
class Team:
    """An open team database and the embedder its project's vectors were made with."""

    database: Database
    embedder: Embedder


def open_database(url: str, *, size: int | None = None) -> tuple[Database, PgStore]:
    """The pool of ``url`` and the project's layers over that same pool (one pool per
    database in a process), once the project is known to exist. The caller closes the
    pool (closing the store leaves it open)."""
    from sediment.pg.database import DEFAULT_SIZE, Database
    from sediment.pg.store import PgStore

    database = Database(url, size=DEFAULT_SIZE if size is None else size)
    try:
        return database, PgStore(database.url, database=database).require_project()
    except BaseException:
        database.close()
        raise


@contextmanager
def open_team(cfg: Config, url: str, embedder_name: str | None) -> Iterator[Team]:
    """The database of ``url`` and the embedder ``--embedder`` names, else the one the
    project's layers record (as ``sediment serve --store`` picks it), else the default."""
    database, layers = open_database(url, size=POOL_SIZE)
    try:
        embedder = build_embedder(cfg, embedder_name, layerset=layers)
        yield Team(database, embedder)
    finally:
        database.close()

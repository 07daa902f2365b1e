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

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sediment.pg.database import Database
    from sediment.pg.store import PgStore

POOL_SIZE = 2
"""Connections of a ``memory`` or ``context`` command's pool."""


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

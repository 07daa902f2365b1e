"""The PostgreSQL + pgvector backend: connections, migrations and the layered store.

A store URL names a server, a database and a project (``?project=NAME``); see
:mod:`sediment.pg.connection`. The schema is managed by :mod:`sediment.pg.migrate`.
"""

from sediment.pg.connection import (
    DEFAULT_PROJECT,
    StoreUrl,
    check_project,
    connect,
    parse_store_url,
)
from sediment.pg.migrate import current_version, latest_version, migrate, require_current
from sediment.pg.search import ensure_vector_index
from sediment.pg.store import PgStore
from sediment.pg.transfer import Transfer, pull, push

__all__ = [
    "DEFAULT_PROJECT",
    "PgStore",
    "StoreUrl",
    "Transfer",
    "check_project",
    "connect",
    "current_version",
    "ensure_vector_index",
    "latest_version",
    "migrate",
    "parse_store_url",
    "pull",
    "push",
    "require_current",
]

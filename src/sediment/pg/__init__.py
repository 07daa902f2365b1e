"""The PostgreSQL + pgvector backend: connections, migrations and the layered store.

A store URL names a server, a database and a project (``?project=NAME``); see
:mod:`sediment.pg.connection`. The schema is managed by :mod:`sediment.pg.migrate`.
"""

from sediment.pg.connection import (
    DEFAULT_PROJECT,
    StoreUrl,
    check_project,
    connect,
    is_store_url,
    parse_store_url,
)
from sediment.pg.migrate import current_version, latest_version, migrate, require_current

__all__ = [
    "DEFAULT_PROJECT",
    "StoreUrl",
    "check_project",
    "connect",
    "current_version",
    "is_store_url",
    "latest_version",
    "migrate",
    "parse_store_url",
    "require_current",
]

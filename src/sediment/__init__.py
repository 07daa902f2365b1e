"""Sediment: a layered, append-only context store and memory server for AI agents.

``sediment.open(directory_or_postgresql_url)`` gives a :class:`Store` with ``search``,
``write``, ``propose``, ``forget``, memories and progressive context: the services behind
the ``sediment`` command and the MCP server.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from sediment.errors import (
    ConfigError,
    EmbeddingError,
    FormatError,
    LockTimeoutError,
    NotFoundError,
    PermissionDeniedError,
    SchemaMismatchError,
    SedimentError,
    SignatureError,
    ValidationError,
)

if TYPE_CHECKING:
    from sediment._api import Store
    from sediment.embed import Embedder

__version__ = "0.1.0"


def open(location: str | os.PathLike[str], *,
         embedder: str | Embedder | None = None,
         cache_path: str | os.PathLike[str] | None = None,
         actor: str | None = None) -> Store:
    """Open the layers in a directory (``AGENTS.db``, ``AGENTS.user.db``,
    ``AGENTS.delta.db``, ``AGENTS.local.db``; any may be absent), or a team server's
    project when ``location`` is a ``postgresql://`` URL."""
    from sediment._api import Store

    return Store(location, embedder=embedder, cache_path=cache_path, actor=actor)


def __getattr__(name: str) -> Any:
    if name == "Store":
        from sediment._api import Store

        return Store
    raise AttributeError(f"module 'sediment' has no attribute {name!r}")

__all__ = [
    "ConfigError",
    "EmbeddingError",
    "FormatError",
    "LockTimeoutError",
    "NotFoundError",
    "PermissionDeniedError",
    "SchemaMismatchError",
    "SedimentError",
    "SignatureError",
    "Store",
    "ValidationError",
    "__version__",
    "open",
]

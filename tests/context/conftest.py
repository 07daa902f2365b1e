"""A context service over a real store: the layer files in a temporary directory, or a
fresh PostgreSQL database (``context_backend`` is parametrised over both, so every test
that takes ``loop`` or the backend runs against each)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sediment.context import ContextLoop, ContextSettings, ContextStore, FileContextStore
from sediment.embed import HashEmbedder
from sediment.pg.context import PgContextStore
from sediment.pg.database import Database

BACKENDS = ("files", "postgres")
_DATABASES: dict[Path, Database] = {}
"""The PostgreSQL database a test's root directory stands for (postgres backend only)."""


def make_store(root: Path) -> ContextStore:
    db = _DATABASES.get(root)
    if db is None:
        return FileContextStore(root / "context", profile=HashEmbedder().profile.to_dict(),
                                dim=384)
    return PgContextStore(db, dim=384)


def make_loop(root: Path, settings: ContextSettings | None = None,
              embedder: Any = None) -> ContextLoop:
    emb = HashEmbedder() if embedder is None else embedder
    return ContextLoop(make_store(root), emb, settings, project="demo",
                       cache_dir=root / "context" / "cache")


def break_store(root: Path) -> None:
    """Make the store under ``root`` unreadable: garbage in the file, or a database that
    does not exist."""
    db = _DATABASES.get(root)
    if db is None:
        (root / "context").mkdir(parents=True, exist_ok=True)
        (root / "context" / "AGENTS.local.db").write_bytes(b"not a layer file at all")
        return
    head, _, query = db.url.conninfo.partition("?")
    _DATABASES[root] = Database(f"{head.rsplit('/', 1)[0]}/no_such_database?{query}",
                                connect_timeout=2)


@pytest.fixture(params=BACKENDS)
def context_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "files":
        yield "files"
        return
    db = _DATABASES[tmp_path] = Database(request.getfixturevalue("pg_url"))
    try:
        yield "postgres"
    finally:
        for d in {db, _DATABASES.pop(tmp_path, db)}:
            d.close()


@pytest.fixture
def loop(tmp_path: Path, context_backend: str) -> ContextLoop:
    """A service over the backend ``context_backend`` set up for ``tmp_path``."""
    assert context_backend in BACKENDS
    return make_loop(tmp_path)

"""The memory service over a store given as a fixture: every backend runs the same tests.

``memory_store`` is parametrised by backend name: the file layers and PostgreSQL (a real
server from ``tests/pg/conftest.py``, a fresh database per test), so every test that takes
the store or the service runs against both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sediment.embed import HashEmbedder
from sediment.memory import FileMemoryStore, MemoryService, MemoryStore
from sediment.pg.database import Database
from sediment.pg.memory import PgMemoryStore
from sediment.store import LayerSet


def _files(root: Path, embedder: HashEmbedder) -> MemoryStore:
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    return FileMemoryStore(LayerSet.from_directory(project), root / "data",
                           profile=embedder.profile.to_dict(), dim=embedder.profile.dim,
                           embedder_metadata=embedder.metadata())


BACKENDS = ("files", "postgres")


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture(params=BACKENDS)
def memory_store(request: pytest.FixtureRequest, tmp_path: Path,
                 embedder: HashEmbedder) -> Iterator[MemoryStore]:
    if request.param == "files":
        yield _files(tmp_path, embedder)
        return
    db = Database(request.getfixturevalue("pg_url"))
    store = PgMemoryStore(db, dim=embedder.profile.dim)
    try:
        yield store
    finally:
        store.close()
        db.close()


@pytest.fixture
def service(memory_store: MemoryStore, embedder: HashEmbedder) -> Iterator[MemoryService]:
    svc = MemoryService(memory_store, embedder)
    yield svc
    svc.close()

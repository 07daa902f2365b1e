"""The memory service over a store given as a fixture: every backend runs the same tests.

``memory_store`` is parametrised by backend name; the file layers are the first. A later
backend (PostgreSQL) adds its name and a factory here, and every test in this directory
runs against it too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sediment.embed import HashEmbedder
from sediment.memory import FileMemoryStore, MemoryService, MemoryStore
from sediment.store import LayerSet

Factory = Callable[[Path, HashEmbedder], MemoryStore]


def _files(root: Path, embedder: HashEmbedder) -> MemoryStore:
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    return FileMemoryStore(LayerSet.from_directory(project), root / "data",
                           profile=embedder.profile.to_dict(), dim=embedder.profile.dim,
                           embedder_metadata=embedder.metadata())


BACKENDS: dict[str, Factory] = {"files": _files}


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture(params=sorted(BACKENDS))
def memory_store(request: pytest.FixtureRequest, tmp_path: Path,
                 embedder: HashEmbedder) -> MemoryStore:
    factory: Factory = BACKENDS[request.param]
    return factory(tmp_path, embedder)


@pytest.fixture
def service(memory_store: MemoryStore, embedder: HashEmbedder) -> Iterator[MemoryService]:
    svc = MemoryService(memory_store, embedder)
    yield svc
    svc.close()

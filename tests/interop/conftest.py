"""A memory service over the file layers with the hash embedder, and helpers to import
and export through it as the command does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sediment.embed import HashEmbedder
from sediment.interop import FORMATS, ImportReport, gather, run_import
from sediment.memory import FileMemoryStore, MemoryService
from sediment.store import LayerSet


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    project = tmp_path / "project"
    project.mkdir()
    embedder = HashEmbedder()
    layers = LayerSet.from_directory(project)
    store = FileMemoryStore(layers, tmp_path / "data", profile=embedder.profile.to_dict(),
                            dim=embedder.profile.dim, embedder_metadata=embedder.metadata())
    svc = MemoryService(store, embedder,
                        chunk_exists=lambda cid, _actor: layers.get(cid) is not None)
    yield svc
    svc.close()


def do_import(service: MemoryService, fmt: str, path: Path, *, actor: str = "ada",
              scope: str | None = None, dry_run: bool = False,
              rows: list[dict[str, Any]] | None = None) -> ImportReport:
    spec = FORMATS[fmt]
    return run_import(service, fmt, spec.read, path, actor=actor,
                      scope=scope or spec.default_scope, dry_run=dry_run,
                      root=path if path.is_dir() else path.parent,
                      on_item=rows.append if rows is not None else None)


def do_export(service: MemoryService, fmt: str, actors: tuple[str, ...] = ("ada",),
              scope: str | None = None) -> bytes | dict[str, bytes]:
    return FORMATS[fmt].write(gather(service, list(actors), scope, None))


def write_files(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root

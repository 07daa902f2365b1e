"""A context service over a real layer-file store in a temporary directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sediment.context import ContextLoop, ContextSettings, FileContextStore
from sediment.embed import HashEmbedder


def make_loop(root: Path, settings: ContextSettings | None = None,
              embedder: Any = None) -> ContextLoop:
    emb = HashEmbedder() if embedder is None else embedder
    store = FileContextStore(root / "context", profile=HashEmbedder().profile.to_dict(),
                             dim=384)
    return ContextLoop(store, emb, settings, project="demo",
                       cache_dir=root / "context" / "cache")


@pytest.fixture
def loop(tmp_path: Path) -> ContextLoop:
    return make_loop(tmp_path)

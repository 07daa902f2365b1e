"""Build the configured embedder (with its on-disk cache) for a command."""

from __future__ import annotations

from sediment.config import Config
from sediment.embed import Embedder, make_embedder


def build_embedder(cfg: Config, name: str | None = None) -> Embedder:
    e = cfg.embedder
    cache = cfg.cache_dir / "embeddings.sqlite" if cfg.cache_dir is not None else None
    return make_embedder(name or e.name, dim=e.dim, base_url=e.base_url, model=e.model,
                         api_key=e.api_key, cache_path=cache)

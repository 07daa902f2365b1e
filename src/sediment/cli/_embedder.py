"""Build the configured embedder (with its on-disk cache) for a command."""

from __future__ import annotations

from sediment.config import Config
from sediment.embed import Embedder, make_embedder


def build_embedder(cfg: Config, name: str | None = None) -> Embedder:
    """The embedder ``name`` (default: configured), given only the options it takes."""
    e = cfg.embedder
    chosen = name or e.name
    cache = cfg.cache_dir / "embeddings.sqlite" if cfg.cache_dir is not None else None
    if chosen == "openai":
        return make_embedder(chosen, dim=e.dim, base_url=e.base_url, model=e.model,
                             api_key=e.api_key, cache_path=cache)
    if chosen == "hash":
        return make_embedder(chosen, dim=e.dim, cache_path=cache)
    return make_embedder(chosen, cache_path=cache)

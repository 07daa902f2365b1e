"""The configured ``[[sources]]`` as directories a compile reads (git ones fetched first)."""

from __future__ import annotations

from sediment.config import Config
from sediment.ingest.connectors import FilesystemSource, GitSource, SourceRoot, resolve_sources


def configured_sources(cfg: Config) -> list[SourceRoot]:
    """Every ``[[sources]]`` entry resolved (none when the section is absent); git sources
    are cloned or fetched into ``<cache dir>/sources``."""
    specs: list[FilesystemSource | GitSource] = []
    for s in cfg.sources:
        if s.type == "git":
            specs.append(GitSource(s.name, s.url or "", s.include, s.exclude, ref=s.ref,
                                   prefix=s.prefix))
        else:
            specs.append(FilesystemSource(s.name, s.root or cfg.root, s.include, s.exclude,
                                          prefix=s.prefix or ""))
    if not specs:
        return []
    cache = cfg.cache_dir if cfg.cache_dir is not None else cfg.root / ".sediment-cache"
    return resolve_sources(specs, cache / "sources")

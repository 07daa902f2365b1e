"""The configured ``[[sources]]`` as directories a compile reads (git ones fetched first),
and the configured compile itself."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from sediment.config import Config
from sediment.ingest.compile import CompileOptions
from sediment.ingest.connectors import FilesystemSource, GitSource, SourceRoot, resolve_sources


def compile_options(cfg: Config, sources: list[SourceRoot], *, root: Path | None = None,
                    out: Path | None = None, no_kcp: bool = False, no_index: bool = False,
                    **flags: Any) -> CompileOptions:
    """The compile ``sediment.toml`` describes, with the flags given (those not empty)
    over it; the KCP manifests under the root annotate it unless ``no_kcp``."""
    root = root or cfg.root
    annotator = None
    if not no_kcp:
        from sediment.kcp import plan_kcp

        annotator = plan_kcp(root)
    c = cfg.compile
    return replace(CompileOptions(
        root=root, include=list(c.include), exclude=list(c.exclude),
        out=out or (cfg.layer_dir / "AGENTS.db"), max_chars=c.max_chars,
        kind_rules=list(c.kinds), default_kind=c.default_kind, element_type=c.element_type,
        annotator=annotator, build_index=not no_index, sources=sources,
        source_date_epoch=cfg.env.source_date_epoch or 0),
        **{k: v for k, v in flags.items() if v})


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

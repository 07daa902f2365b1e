"""Build an Embedder from configuration names and options (sediment.toml, CLI flags, env)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sediment.embed.base import Embedder
from sediment.embed.cache import CachedEmbedder, EmbeddingCache
from sediment.embed.hashing import HashEmbedder
from sediment.embed.minilm import MINILM_DIM, MINILM_MODEL, MiniLMEmbedder
from sediment.embed.openai import OpenAIEmbedder
from sediment.embed.profile import PROFILE_FIELDS, EmbeddingProfile
from sediment.errors import ConfigError, SedimentError

__all__ = ["DEFAULT_EMBEDDER", "EMBEDDER_NAMES", "embedder_for_profile",
           "make_configured", "make_embedder", "profile_for"]

DEFAULT_EMBEDDER = "minilm"
EMBEDDER_NAMES: tuple[str, ...] = ("minilm", "hash", "openai")

_TAKES: dict[str, frozenset[str]] = {
    "minilm": frozenset(),
    "hash": frozenset({"dim"}),
    "openai": frozenset({"dim", "base_url", "model", "api_key"}),
}


def make_embedder(
    name: str = DEFAULT_EMBEDDER,
    *,
    dim: int | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    cache_path: Path | None = None,
) -> Embedder:
    """Construct the named embedder, wrapped in an on-disk cache when ``cache_path`` is set.

    Options that do not apply to the chosen embedder are rejected rather than ignored, so a
    misconfiguration (say ``base_url`` with ``minilm``) is noticed instead of silently
    producing vectors from a different model than intended. Nothing is loaded or contacted.
    """
    embedder = _build(name, dim=dim, base_url=base_url, model=model, api_key=api_key)
    if cache_path is not None:
        return CachedEmbedder(embedder, EmbeddingCache(cache_path))
    return embedder


def make_configured(name: str = DEFAULT_EMBEDDER, *, cache_path: Path | None = None,
                    **settings: Any) -> Embedder:
    """``make_embedder`` from a whole configuration: settings that the named embedder does
    not take (they configure another one) are left out instead of rejected."""
    key = name.strip().lower()
    takes = _TAKES.get(key, frozenset())
    return make_embedder(name, cache_path=cache_path,
                         **{k: v for k, v in settings.items() if k in takes})


def embedder_for_profile(profile: Mapping[str, Any] | None, *,
                         cache_path: Path | None = None) -> Embedder | None:
    """The offline embedder whose profile equals ``profile`` (a layer's recorded
    ``embedding_profile``), or None when no offline embedder makes such vectors.

    Network embedders are never returned: a layer file must not be able to make Sediment
    send queries to an address its user did not configure.
    """
    if not isinstance(profile, Mapping):
        return None
    backend, dim = profile.get("backend"), profile.get("dim")
    if backend == "hash" and isinstance(dim, int) and not isinstance(dim, bool) and dim > 0:
        name = "hash"
    elif backend == "onnxruntime" and profile.get("model") == MINILM_MODEL:
        name, dim = "minilm", None
    else:
        return None
    try:
        made = _build(name, dim=dim, base_url=None, model=None, api_key=None)
        if any(made.profile.to_dict().get(k) != profile.get(k) for k in PROFILE_FIELDS):
            return None
    except SedimentError:  # the model's files are missing, say
        return None
    return CachedEmbedder(made, EmbeddingCache(cache_path)) if cache_path else made


def profile_for(
    name: str = DEFAULT_EMBEDDER,
    *,
    dim: int | None = None,
    base_url: str | None = None,
    model: str | None = None,
) -> EmbeddingProfile:
    """The profile ``make_embedder`` would produce, without loading any model or network call."""
    return _build(name, dim=dim, base_url=base_url, model=model, api_key=None).profile


def _build(
    name: str,
    *,
    dim: int | None,
    base_url: str | None,
    model: str | None,
    api_key: str | None,
) -> Embedder:
    key = name.strip().lower()
    if key not in EMBEDDER_NAMES:
        raise ConfigError(
            f"unknown embedder {name!r}; valid names are: {', '.join(EMBEDDER_NAMES)}"
        )
    try:
        if key == "openai":
            if base_url is None or model is None or dim is None:
                raise ConfigError(
                    "embedder 'openai' needs base_url (e.g. http://localhost:11434/v1), "
                    "model and dim"
                )
            return OpenAIEmbedder(base_url, model, dim, api_key=api_key)
        _reject_unused(key, base_url=base_url, model=model, api_key=api_key)
        if key == "hash":
            return HashEmbedder(dim if dim is not None else 384)
        if dim is not None and dim != MINILM_DIM:
            raise ConfigError(f"embedder 'minilm' has {MINILM_DIM} dimensions, not {dim}")
        return MiniLMEmbedder()
    except ConfigError:
        raise
    except SedimentError as exc:
        raise ConfigError(f"embedder {key!r}: {exc}") from exc


def _reject_unused(key: str, **options: str | None) -> None:
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise ConfigError(f"embedder {key!r} does not take option(s): {', '.join(given)}")

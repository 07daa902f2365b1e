"""Which embedder a search or write uses when the caller configured none: the offline one
recorded in the layers' embedding profile (a layer compiled with the hash embedder is
searched with it, without a flag on every search)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sediment.embed import Embedder, embedder_for_profile
from sediment.store import LayerName, LayerStore


def embedder_for_layers(layerset: LayerStore, names: Iterable[LayerName] | None = None, *,
                        cache_path: Path | None = None) -> Embedder | None:
    """The offline embedder that made the layers' vectors, or None (no layer records a
    profile, or it names a network embedder, which only the user's configuration may
    choose). Layers recording different profiles raise ``SchemaMismatchError``."""
    schema = layerset.schema(names)
    if schema is None or schema.profile is None:
        return None
    return embedder_for_profile(schema.profile, cache_path=cache_path)

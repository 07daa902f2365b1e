"""Small helpers the review modules share: vectors, layer lookups."""

from __future__ import annotations

from sediment.errors import NotFoundError
from sediment.store import LayerName, LayerSet, LayerStore, OpenLayer


def require_layer(layerset: LayerSet, name: LayerName) -> OpenLayer:
    layer = layerset.layer(name)
    if layer is None:
        where = layerset.paths.get(name)
        raise NotFoundError(f"the {name.value} layer does not exist"
                            + (f" ({where})" if where else ""))
    return layer


def require_present(store: LayerStore, name: LayerName) -> None:
    """``require_layer`` for any backend."""
    if name not in store.present([name]):
        raise NotFoundError(f"the {name.value} layer does not exist ({store.location(name)})")


def set_dim(layerset: LayerStore) -> int:
    """The vector width of the set, for the zero vectors of event chunks."""
    schema = layerset.schema()
    return schema.dim if schema is not None else 0


def layer_name_for_file(name: str) -> LayerName | None:
    """The standard layer a file name denotes (``AGENTS.user.db`` -> user), else None."""
    return next((layer for layer in LayerName if name == layer.file_name), None)

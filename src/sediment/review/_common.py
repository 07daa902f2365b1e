"""Small helpers the review modules share: event tests, vectors, layer lookups."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sediment.errors import NotFoundError
from sediment.format import Chunk, LayerFile
from sediment.store import LayerName, LayerSet, LayerStore, OpenLayer
from sediment.store.events import is_meta_kind, kind_mask


def is_event(chunk: Chunk) -> bool:
    """``meta.*`` chunks record state changes; they are not context to review or merge."""
    return is_meta_kind(chunk.kind)


def event_mask(f: LayerFile) -> npt.NDArray[np.bool_]:
    """Which chunks of ``f`` are ``meta.*`` events."""
    return kind_mask(f, is_meta_kind)


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
    for layer in LayerName:
        if name == layer.file_name:
            return layer
    return None

"""Archive a layer to a dated file and reset it to an empty layer (RFC 15.6).

After a compaction folds the user layer into a new base, the new base replaces the live one
(:func:`install_base`, the old base archived), and only then do user and delta start over,
so no moment shows a set missing what was accepted. Each old file is kept under a dated
name (the date lives only in the file name, never in layer metadata, which stays
reproducible); the reset layer is an empty file that keeps the embedding profile, the
schema and an ``id_high_water`` at least as high as any id ever used, so no id is ever
handed out twice.

Callers hold the layers' write locks (``LayerSet.transaction``) for the whole operation, the
same lock files ``LayerSet.append`` takes, so no concurrent append is lost between reading a
layer and resetting it.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sediment.errors import SedimentError
from sediment.format import LayerFile, encode_layer
from sediment.store.atomic import atomic_write, fsync_dir
from sediment.store.ids import file_high_water

STAMP_FORMAT = "%Y-%m-%dT%H%M%S"


@dataclass(frozen=True, slots=True)
class Rotation:
    layer: str
    archive: str
    chunks: int
    id_high_water: int
    installed: bool = False
    """True for the base: the new base took its place (else the layer was reset empty)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def utc_stamp() -> str:
    return time.strftime(STAMP_FORMAT, time.gmtime())


def archive_path(layer: Path, stamp: str) -> Path:
    """``AGENTS.user.db`` -> ``AGENTS.user.<stamp>.db``; ``-1``, ``-2``... if taken."""
    stem, suffix = (layer.name[:-3], ".db") if layer.name.endswith(".db") else (layer.name, "")
    for n in range(1000):
        extra = f"-{n}" if n else ""
        candidate = layer.with_name(f"{stem}.{stamp}{extra}{suffix}")
        if not candidate.exists():
            return candidate
    raise SedimentError(f"{layer}: too many archives named for {stamp}")


def empty_layer(like: LayerFile, id_high_water: int) -> bytearray:
    """An empty layer with ``like``'s schema and metadata, and the given high-water mark."""
    metadata = dict(like.metadata or {})
    metadata.setdefault("v", 1)
    metadata["id_high_water"] = max(id_high_water, file_high_water(like))
    i8 = like.element_type == "i8"
    return encode_layer([], np.zeros((0, like.dim), dtype=np.float32), dim=like.dim,
                        element_type=like.element_type,
                        quant_scale=like.quant_scale if i8 else None, metadata=metadata)


def _archive(layer: Path, stamp: str) -> Path:
    target = archive_path(layer, stamp)
    try:
        os.link(layer, target)
        fsync_dir(target.parent)
    except OSError:
        atomic_write(target, layer.read_bytes())
    return target


def install_base(base: Path, data: bytes | bytearray, *, stamp: str) -> Rotation:
    """Keep the live ``base`` under a dated name and put ``data`` (the new base) in its
    place atomically; readers see the old base or the new one, never neither."""
    old = LayerFile.open(base)
    target = _archive(base, stamp)
    atomic_write(base, data)
    return Rotation(str(base), str(target), old.chunk_count, file_high_water(old), installed=True)


def archive_and_reset(layer: Path, *, id_high_water: int, stamp: str) -> Rotation | None:
    """Keep ``layer`` under a dated name and replace it by an empty layer.

    The archive is a hard link to the old file (a copy where links are unsupported), and
    the reset is an atomic rename, so readers never see the layer missing. Returns None
    when the layer does not exist. The caller holds the lock (``LayerSet.transaction``).
    """
    if not layer.exists():
        return None
    f = LayerFile.open(layer)
    data = empty_layer(f, id_high_water)
    target = _archive(layer, stamp)
    atomic_write(layer, data)
    return Rotation(str(layer), str(target), f.chunk_count,
                    max(id_high_water, file_high_water(f)))

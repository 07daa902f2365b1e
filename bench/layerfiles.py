"""Write synthetic layer files with the product's own writer, ``encode_layer``, and time it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench import procmem, synthetic
from sediment.format import Chunk, encode_layer

I8_SCALE = 1.0 / 127.0
"""The scale Sediment uses for L2-normalised vectors (every component is within -1..1)."""

ELEMENT_SIZE = {"f32": 4, "i8": 1}


@dataclass(frozen=True, slots=True)
class BuiltLayer:
    path: Path
    rows: int
    dim: int
    element_type: str
    nbytes: int
    encode_s: float
    write_s: float
    encode_extra_rss: int | None
    """Peak RSS during encode_layer minus RSS before it (None where it cannot be read)."""

    @property
    def matrix_bytes(self) -> int:
        return self.rows * self.dim * ELEMENT_SIZE[self.element_type]


def build(path: Path, chunks: Sequence[Chunk], vectors: npt.NDArray[np.float32],
          element_type: str) -> BuiltLayer:
    """Encode ``chunks`` and ``vectors`` with ``encode_layer`` and write them to ``path``.

    For i8 the float vectors go in with ``quant_scale = 1/127``, as ``compile`` does for
    L2-normalised embedders, so the timing includes the product's quantisation.
    """
    n, dim = vectors.shape
    high = max((c.id for c in chunks), default=0)
    before = procmem.status().get("VmRSS")
    can_peak = procmem.reset_peak()
    t = time.perf_counter()
    data = encode_layer(chunks, vectors, dim=dim, element_type=element_type,
                        quant_scale=I8_SCALE if element_type == "i8" else None,
                        metadata=synthetic.layer_metadata(dim, high))
    encode_s = time.perf_counter() - t
    peak = procmem.status().get("VmHWM")
    extra = peak - before if can_peak and peak is not None and before is not None else None
    path.parent.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    path.write_bytes(data)
    write_s = time.perf_counter() - t
    size = len(data)
    del data
    return BuiltLayer(path, n, dim, element_type, size, encode_s, write_s, extra)

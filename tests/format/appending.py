"""Appends as the store makes them (``write_append`` into a new file), returned as bytes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sediment.format import Chunk, LayerFile
from sediment.format.writer import write_append


def appended(base: LayerFile, chunks: Sequence[Chunk], vectors: np.ndarray, *,
             metadata: dict[str, Any] | None, vectorless: Sequence[bool] | None = None,
             directory: Path | None = None) -> bytes:
    """The bytes of ``base`` with ``chunks`` appended, checked against the size returned."""
    fd, name = tempfile.mkstemp(dir=directory)
    try:
        size = write_append(fd, base, chunks, vectors, metadata=metadata, vectorless=vectorless)
        os.close(fd)
        data = Path(name).read_bytes()
    finally:
        os.unlink(name)
    assert size == len(data)
    return data

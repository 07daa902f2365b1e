"""The Embedder contract shared by every backend, and the helpers that enforce it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from sediment.embed.profile import EmbeddingProfile
from sediment.errors import ValidationError

__all__ = ["Embedder", "Matrix", "check_texts", "empty_matrix", "l2_normalize"]

#: A float32 matrix with one row per text.
Matrix = NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors described by :attr:`profile`.

    ``embed`` returns a C-contiguous float32 array of shape ``(len(texts), profile.dim)``
    (``(0, dim)`` for no texts), rows in input order. ``metadata`` is the RFC's optional
    ``embedder_metadata``: runtime and model details that help audit a layer; it must be
    deterministic (no timestamps, no secrets) because it is written into layer files.
    """

    @property
    def profile(self) -> EmbeddingProfile: ...

    def embed(self, texts: Sequence[str]) -> Matrix: ...

    def metadata(self) -> dict[str, Any]: ...


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return ``texts`` as a list, rejecting a bare string (a Sequence of characters)."""
    if isinstance(texts, str | bytes):
        raise ValidationError("embed() takes a sequence of texts, not a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ValidationError(f"text {i} is {type(t).__name__}, expected str")
    return out


def empty_matrix(dim: int) -> Matrix:
    """The ``(0, dim)`` result for an empty input."""
    return np.zeros((0, dim), dtype=np.float32)


def l2_normalize(matrix: NDArray[np.floating[Any]]) -> Matrix:
    """Scale each row to unit length in float32; all-zero rows stay zero rather than NaN."""
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    np.maximum(norms, np.finfo(np.float32).tiny, out=norms)
    return np.ascontiguousarray(m / norms, dtype=np.float32)

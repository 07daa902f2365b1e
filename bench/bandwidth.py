"""Memory bandwidth: the floor under any exact scan of a matrix bigger than the caches."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

GIB = 1 << 30
GEMV_DIM = 384


@dataclass(frozen=True, slots=True)
class Bandwidth:
    nbytes: int
    copy_best_s: float
    gemv_best_s: float
    gemv_bytes: int

    @property
    def copy_gbps(self) -> float:
        """(bytes read + bytes written) / best copy time, in GB/s (10^9)."""
        return 2 * self.nbytes / self.copy_best_s / 1e9

    @property
    def copy_read_gbps(self) -> float:
        """Bytes read (the source only) / best copy time."""
        return self.nbytes / self.copy_best_s / 1e9

    @property
    def gemv_gbps(self) -> float:
        """Bytes of the matrix / best float32 matrix-vector product time (read-only stream)."""
        return self.gemv_bytes / self.gemv_best_s / 1e9

    @property
    def limit_gbps(self) -> float:
        """The bandwidth the scan targets are judged against: the copy's read + write rate."""
        return self.copy_gbps


def measure(nbytes: int = GIB, repeats: int = 5) -> Bandwidth:
    """Best of ``repeats`` ``np.copyto`` of ``nbytes``; and of a float32 (rows, 384) GEMV over
    the same bytes, as a read-only reference.

    Both arrays are written once before timing so page faults are not counted.
    """
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.zeros(nbytes, dtype=np.uint8)
    copies = []
    for _ in range(repeats):
        t = time.perf_counter()
        np.copyto(dst, src)
        copies.append(time.perf_counter() - t)
    del dst
    rows = nbytes // (4 * GEMV_DIM)
    matrix = src[: rows * 4 * GEMV_DIM].view(np.float32).reshape(rows, GEMV_DIM)
    matrix.fill(0.5)
    vec = np.ones(GEMV_DIM, dtype=np.float32)
    gemvs = []
    for _ in range(repeats):
        t = time.perf_counter()
        matrix @ vec
        gemvs.append(time.perf_counter() - t)
    return Bandwidth(nbytes, min(copies), min(gemvs), int(matrix.nbytes))

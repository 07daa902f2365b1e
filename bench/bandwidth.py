"""Memory bandwidth: the floor under any exact scan of a matrix bigger than the caches."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class Bandwidth:
    nbytes: int
    copy_best_s: float
    gemv_best_s: float

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
        return self.nbytes / self.gemv_best_s / 1e9

    @property
    def limit_gbps(self) -> float:
        """The bandwidth the scan targets are judged against: the copy's read + write rate."""
        return self.copy_gbps


def measure(nbytes: int = GIB, repeats: int = 5) -> Bandwidth:
    """Best of ``repeats`` ``np.copyto`` of ``nbytes``, and of a float32 GEMV as reference.

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
    matrix = src.view(np.float32).reshape(-1, 256)
    matrix.fill(0.5)
    vec = np.ones(256, dtype=np.float32)
    gemvs = []
    for _ in range(repeats):
        t = time.perf_counter()
        matrix @ vec
        gemvs.append(time.perf_counter() - t)
    return Bandwidth(nbytes, min(copies), min(gemvs))

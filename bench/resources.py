"""Free disk and memory, and what each layer size needs of them, checked before building."""

from __future__ import annotations

import shutil
from pathlib import Path

TEXT_BYTES_PER_CHUNK = 200
"""Chunk record (52 B), string entry (16 B), content (~55 B) and slack, per chunk."""


def disk_free(path: Path) -> int:
    probe = path
    while not probe.exists():
        probe = probe.parent
    return shutil.disk_usage(probe).free


def mem_available() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def disk_needed(rows: int, dim: int) -> int:
    """The f32 and the i8 file of one size, side by side."""
    return rows * (dim * 4 + dim * 1 + 2 * TEXT_BYTES_PER_CHUNK)


def memory_needed(rows: int, dim: int) -> int:
    """The float32 vectors, plus encode_layer's peak for f32: its matrix bytes, the growing
    output buffer and the final ``bytes`` copy (about three file sizes)."""
    f32 = rows * dim * 4
    return f32 + 3 * (f32 + rows * TEXT_BYTES_PER_CHUNK)


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"

"""The two id ranges: compiled chunks below 2^31, chunks written at run time from 2^31 up.

A compile sees only its sources and the previous base; a writer sees every layer of its set.
Giving each its own half of the u32 space is what lets the two never collide without the
compile reading the (ephemeral, uncommitted) local layer: a writer allocates above every id
of the set and never below ``WRITTEN_START``; a compile allocates below ``WRITTEN_START``.
See docs/architecture.md, "Ids".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sediment.errors import ValidationError

U32_MAX = 2**32 - 1
WRITTEN_START = 2**31
COMPILED_MAX = WRITTEN_START - 1
LEGACY_COMPILE_START = 2**30
"""Where a recompile numbers new chunks when the previous base predates the id ranges:
writers of that time numbered from just above the base, so new compiled ids keep clear."""

ID_RANGES: dict[str, list[int]] = {"compiled": [1, COMPILED_MAX],
                                   "written": [WRITTEN_START, U32_MAX]}
"""Recorded in a compiled base's metadata (key ``id_ranges``), marking the scheme."""


def recorded_high_water(metadata: Mapping[str, Any] | None) -> int:
    """A layer's ``id_high_water`` (0 when absent or not an integer)."""
    hw = (metadata or {}).get("id_high_water")
    return hw if isinstance(hw, int) and not isinstance(hw, bool) and hw > 0 else 0


def has_id_ranges(metadata: Mapping[str, Any] | None) -> bool:
    return (metadata or {}).get("id_ranges") == ID_RANGES


def first_written_id(high_water: int) -> int:
    """The next id a writer gives, given the set's high-water mark (largest id ever used)."""
    return max(high_water, WRITTEN_START - 1) + 1


def check_chosen_id(cid: int, taken: set[int], layer: str) -> None:
    """An id the caller chose for a new chunk: within the u32 range and not yet in
    ``layer`` (layers are append-only); every backend's append applies the same rule."""
    if not 0 < cid <= U32_MAX:
        raise ValidationError(f"chunk id {cid} is outside 1..{U32_MAX}")
    if cid in taken:
        raise ValidationError(
            f"chunk id {cid} already exists in the {layer} layer; layers "
            "are append-only, so a new version goes to a higher layer")

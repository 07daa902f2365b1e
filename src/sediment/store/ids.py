"""The id ranges: compiled chunks below 2^31, chunks written at run time from 2^31 up, and
the written half split once more by the kind of store that writes.

A compile sees only its sources and the previous base; a writer sees every layer of its set.
Giving each its own half of the u32 space is what lets the two never collide without the
compile reading the (ephemeral, uncommitted) local layer: a writer allocates above every id
of its range in the set and never below ``WRITTEN_START``; a compile allocates below it.

An actor reads a project's layers together with two stores a project writer never sees: the
project's progressive-context store and the actor's own memory store (shared by every
project). Each kind of store writes in its own part of the written half (``PROJECT_IDS``,
``CONTEXT_IDS``, ``ACTOR_IDS``), so no written id names two chunks among the things one
actor reads, whichever store allocated it, and no store has to read the others to know.
See docs/architecture.md, "Ids".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sediment.errors import ValidationError

if TYPE_CHECKING:
    from sediment.format import LayerFile

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


def file_high_water(f: LayerFile) -> int:
    """The largest id the layer file ``f`` uses or records having used."""
    return max(int(f.ids.max()) if f.chunk_count else 0, recorded_high_water(f.metadata))


def has_id_ranges(metadata: Mapping[str, Any] | None) -> bool:
    return (metadata or {}).get("id_ranges") == ID_RANGES


@dataclass(frozen=True, slots=True)
class WrittenRange:
    """The written ids one kind of store gives out: ``first`` .. ``last``, in order, each
    once. A store allocates above the largest id of the range it uses or ever used, so ids
    of other ranges in the same files (written by older versions, which numbered every store
    from 2^31, or pulled from a server) are read as they are and never move it."""

    name: str
    first: int
    last: int

    def __contains__(self, cid: object) -> bool:
        return isinstance(cid, int) and self.first <= cid <= self.last

    def high_water(self, ids: Iterable[int]) -> int:
        """The largest of ``ids`` (ids used, or recorded high-water marks) in this range;
        ``first - 1`` when none is."""
        return max((i for i in ids if self.first <= i <= self.last), default=self.first - 1)

    def next_ids(self, high_water: int, n: int) -> range:
        """``n`` fresh ids after ``high_water`` (this range's, from :meth:`high_water`)."""
        start = max(high_water, self.first - 1) + 1
        if n and start + n - 1 > self.last:
            raise self.exhausted(n)
        return range(start, start + n)

    def exhausted(self, n: int) -> ValidationError:
        """The error of an allocation of ``n`` ids that would pass the range's end (a
        server's id sequence raises it too)."""
        return ValidationError(
            f"chunk ids are exhausted: the {self.name} range of written ids "
            f"({self.first}..{self.last}) has no {n} free id(s) left")


PROJECT_IDS = WrittenRange("project", WRITTEN_START, 3 * 2**30 - 1)
"""A project's layers (writes, proposals, decisions, imports, memories kept in the project,
a server's id sequence, which ends here: migration 0075): 2147483648 .. 3221225471, 2^30
ids."""
CONTEXT_IDS = WrittenRange("context", 3 * 2**30, 7 * 2**29 - 1)
"""A project's progressive-context store (items and their events): 3221225472 ..
3758096383, 2^29 ids."""
ACTOR_IDS = WrittenRange("actor", 7 * 2**29, U32_MAX)
"""An actor's own memory store (``u`` memories and their use counts), which follows the
actor into every project: 3758096384 .. 4294967295, 2^29 ids."""


def check_chosen_id(cid: int, taken: set[int], layer: str) -> None:
    """An id the caller chose for a new chunk: within the u32 range and not yet in
    ``layer`` (layers are append-only); every backend's append applies the same rule."""
    if not 0 < cid <= U32_MAX:
        raise ValidationError(f"chunk id {cid} is outside 1..{U32_MAX}")
    if cid in taken:
        raise ValidationError(
            f"chunk id {cid} already exists in the {layer} layer; layers "
            "are append-only, so a new version goes to a higher layer")

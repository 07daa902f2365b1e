"""Ids for a compiled base: kept from the previous base for unchanged chunks, new ones above.

A chunk is "unchanged" when its source path and content equal those of a chunk of the
previous base (the line may move; identical chunks of one file are matched in order). New
chunks are numbered above the previous base's high-water mark, so an id a recompile dropped
never comes back for other content, and always below ``WRITTEN_START``, so no compiled id
can be one a writer gave in user, delta or local (docs/architecture.md, "Ids"). Only the
sources and the previous base decide the ids: the same inputs give the same ids anywhere.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sediment.errors import SedimentError, ValidationError
from sediment.format import Chunk, LayerFile, Source
from sediment.store.ids import (
    COMPILED_MAX,
    LEGACY_COMPILE_START,
    has_id_ranges,
    recorded_high_water,
)

Key = tuple[str, str]


def chunk_key(content: str, sources: Sequence[Source]) -> Key:
    """(path of the first ``path:line`` source, content): what "the same chunk" means."""
    for s in sources:
        if isinstance(s, str):
            path, sep, line = s.rpartition(":")
            return (path if sep and line.isascii() and line.isdigit() else s, content)
    return ("", content)


class CompiledIds:
    """Hands out ids for a compile, one chunk at a time, in the compile's fixed order."""

    def __init__(self, previous: Path | None,
                 known: tuple[Sequence[Chunk], Mapping[str, Any] | None] | None = None) -> None:
        """``known``: the previous base's chunks and metadata when the caller has them
        decoded already (a sync), so they are not decoded twice."""
        self._kept: dict[Key, deque[int]] = {}
        top = 0
        if known is None and previous is not None and previous.exists():
            try:
                f = LayerFile.open(previous)
                known = (f.chunks_at(range(f.chunk_count)), f.metadata)
            except SedimentError as exc:
                raise ValidationError(
                    f"{previous}: the previous base cannot be read, so its chunks' ids cannot "
                    f"be kept ({exc}); move it away to compile with fresh ids") from exc
        if known is not None:
            chunks, metadata = known
            for c in chunks:
                if c.id <= COMPILED_MAX:
                    self._kept.setdefault(chunk_key(c.content, c.sources), deque()).append(c.id)
                    top = max(top, c.id)
            top = max(top, min(recorded_high_water(metadata), COMPILED_MAX))
            if chunks and not has_id_ranges(metadata):
                top = max(top, LEGACY_COMPILE_START)
        self._next = top + 1
        self.kept = 0

    def allocate(self, content: str, sources: Sequence[Source]) -> int:
        ids = self._kept.get(chunk_key(content, sources))
        if ids:
            self.kept += 1
            return ids.popleft()
        if self._next > COMPILED_MAX:
            raise ValidationError(f"compiled chunk ids are exhausted (all of 1..{COMPILED_MAX} "
                                  "were used by earlier compiles)")
        self._next += 1
        return self._next - 1

    @property
    def high_water(self) -> int:
        """The largest compiled id given so far or by any earlier compile."""
        return self._next - 1

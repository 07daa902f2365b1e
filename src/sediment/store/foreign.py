"""Layers whose ids were chosen by another implementation and collide with lower layers.

Sediment gives every new chunk an id no layer of the set uses, so the same id in two layers
means two versions of one chunk. Other writers need not: the reference implementation
numbers each layer from 1, so its user chunks 1-4 "override" unrelated base chunks 1-4 and
hide them from search. Such a layer is recognised by two signs together: it does not
record Sediment's ``id_high_water``, and chunks sharing an id with a lower layer are plainly
not versions of them (another kind, or ``path:line`` sources in no common file). The fix is
to import the layer into fresh ids (docs/architecture.md, "Ids").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sediment.format import Chunk
from sediment.store.layers import PRECEDENCE, LayerName
from sediment.store.layerset import LayerSet

MAX_CHECKED = 10_000
"""Colliding ids compared per pair of layers; enough to tell, bounded for huge layers."""


@dataclass(frozen=True, slots=True)
class ForeignIds:
    """Ids of ``layer`` that name unrelated chunks of ``lower``."""

    layer: LayerName
    lower: LayerName
    ids: tuple[int, ...]

    def describe(self) -> str:
        shown = ", ".join(map(str, self.ids[:8])) + (" ..." if len(self.ids) > 8 else "")
        return f"{self.layer.value} reuses {len(self.ids)} id(s) of {self.lower.value} ({shown})"


@dataclass(frozen=True, slots=True)
class ForeignNotice:
    """One notice for the whole set: which layers collide with which, and the fix."""

    collisions: tuple[ForeignIds, ...]

    @property
    def layers(self) -> list[LayerName]:
        return list(dict.fromkeys(c.layer for c in self.collisions))

    @property
    def message(self) -> str:
        names = " and ".join(n.value for n in self.layers)
        return (f"ids collide across layers: {'; '.join(c.describe() for c in self.collisions)}"
                f". The {names} layer(s) were not written by Sediment (no id_high_water) and "
                "these chunks are unrelated to the ones they hide. Fix: `sediment export` each "
                "such layer, move its file away, and `sediment import FILE --into LAYER "
                "--fresh-ids`")

    def to_dict(self) -> dict[str, object]:
        return {"collisions": [{"layer": c.layer.value, "hides": c.lower.value,
                                "ids": list(c.ids)} for c in self.collisions],
                "message": self.message}


def _paths(c: Chunk) -> set[str]:
    return {s.rpartition(":")[0] or s for s in c.sources if isinstance(s, str)}


def unrelated(upper: Chunk, lower: Chunk) -> bool:
    """True when ``upper`` cannot be a version of ``lower``."""
    if upper.kind != lower.kind:
        return True
    a, b = _paths(upper), _paths(lower)
    return bool(a and b and not a & b)


def foreign_ids(layerset: LayerSet) -> ForeignNotice | None:
    """The (upper, lower) pairs of layers where the upper one, written elsewhere, hides
    unrelated lower chunks; None for sets Sediment wrote."""
    present = layerset.layers()
    out: list[ForeignIds] = []
    for i, upper in enumerate(present):
        if upper.name is LayerName.BASE or not upper.file.chunk_count:
            continue
        if "id_high_water" in (upper.file.metadata or {}):
            continue
        for lower in present[i + 1:]:
            if not lower.file.chunk_count:
                continue
            shared = np.intersect1d(upper.file.ids, lower.file.ids)[:MAX_CHECKED].tolist()
            bad = []
            for cid in shared:
                u, low = upper.file.get(int(cid)), lower.file.get(int(cid))
                if u is not None and low is not None and unrelated(u, low):
                    bad.append(int(cid))
            if bad:
                out.append(ForeignIds(upper.name, lower.name, tuple(bad)))
    out.sort(key=lambda f: (PRECEDENCE.index(f.layer), PRECEDENCE.index(f.lower)))
    return ForeignNotice(tuple(out)) if out else None

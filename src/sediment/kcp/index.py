"""The KCP units a layer set knows, folded from its ``meta.kcp_unit`` events.

A unit is keyed by (manifest path, unit id), so two manifests may reuse an id. When several
events describe the same unit, the one in the highest layer wins, then the one with the
larger chunk id (ids are allocated upwards and never reused, so that is the later one). A
version of the same chunk id in a higher layer overrides a lower one (precedence), and
events hidden by ``meta.forget`` / ``meta.supersede`` are skipped. Supersession (a unit's
``supersedes`` list) only links units of the same manifest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from sediment.format import Chunk, LayerFile
from sediment.kcp.graph import load_order as _load_order
from sediment.store import PRECEDENCE, LayerName, LayerSet
from sediment.store.derived import derived
from sediment.store.events import META_PREFIX, kind_mask, parse_event

UNIT_KIND = META_PREFIX + "kcp_unit"
"""The event kind of a compiled unit: written by ``ingest``, folded here."""

__all__ = ["KcpIndex", "UnitKey", "UnitRecord"]

UnitKey = tuple[str, str]
"""(manifest path, unit id)."""


@dataclass(frozen=True, slots=True)
class UnitRecord:
    manifest: str
    project: str
    id: str
    path: str
    intent: str
    scope: str
    audience: tuple[str, ...]
    triggers: tuple[str, ...]
    validated: str | None
    supersedes: tuple[str, ...]
    depends_on: tuple[str, ...]
    kind: str
    deprecated: bool
    chunk_ids: tuple[int, ...]
    intent_chunk: int | None
    event_id: int
    layer: LayerName

    @property
    def key(self) -> UnitKey:
        return (self.manifest, self.id)


def _strings(value: object) -> tuple[str, ...]:
    return tuple(x for x in value if isinstance(x, str)) if isinstance(value, list) else ()


def _record(layer: LayerName, chunk: Chunk) -> UnitRecord | None:
    data = parse_event(chunk)
    manifest, uid = data.get("manifest"), data.get("unit")
    if not isinstance(manifest, str) or not isinstance(uid, str):
        return None
    text = {k: v if isinstance(v := data.get(k), str) else "" for k in
            ("project", "path", "intent", "scope", "kind")}
    validated = data.get("validated")
    intent_chunk = data.get("intent_chunk")
    return UnitRecord(
        manifest=manifest, project=text["project"], id=uid, path=text["path"],
        intent=text["intent"], scope=text["scope"] or "global",
        audience=_strings(data.get("audience")), triggers=_strings(data.get("triggers")),
        validated=validated if isinstance(validated, str) else None,
        supersedes=_strings(data.get("supersedes")), depends_on=_strings(data.get("depends_on")),
        kind=text["kind"] or "knowledge", deprecated=data.get("deprecated") is True,
        chunk_ids=tuple(s for s in chunk.sources if isinstance(s, int)),
        intent_chunk=intent_chunk if isinstance(intent_chunk, int)
        and not isinstance(intent_chunk, bool) else None,
        event_id=chunk.id, layer=layer)


def _file_records(f: LayerFile, layer: LayerName) -> list[UnitRecord]:
    """The unit events of one file, parsed once per (immutable) file and layer name."""
    return derived(f, ("kcp.units", layer), lambda f: _parse_records(f, layer))


def _parse_records(f: LayerFile, layer: LayerName) -> list[UnitRecord]:
    if not f.chunk_count:
        return []
    rows = np.flatnonzero(kind_mask(f, UNIT_KIND.__eq__)).tolist()
    return [r for i in rows if (r := _record(layer, f.chunk_at(int(i)))) is not None]


class KcpIndex:
    """Units by key, the units each chunk belongs to, and who supersedes whom."""

    def __init__(self, records: Iterable[UnitRecord]) -> None:
        self.units: dict[UnitKey, UnitRecord] = {}
        for r in records:
            cur = self.units.get(r.key)
            if cur is None or (r.layer.rank, r.event_id) > (cur.layer.rank, cur.event_id):
                self.units[r.key] = r
        self.by_chunk: dict[int, list[UnitKey]] = {}
        self.superseded_by: dict[UnitKey, list[UnitKey]] = {}
        for key, r in self.units.items():
            for cid in r.chunk_ids:
                self.by_chunk.setdefault(cid, []).append(key)
            for old in r.supersedes:
                if old != r.id and (r.manifest, old) in self.units:
                    self.superseded_by.setdefault((r.manifest, old), []).append(key)

    @classmethod
    def from_layerset(cls, layerset: LayerSet,
                      layers: Sequence[LayerName] | None = None) -> KcpIndex:
        names = tuple(layers) if layers is not None else PRECEDENCE
        present = layerset.layers(names)
        hidden = layerset.hidden(present)
        seen: set[int] = set()
        found: list[UnitRecord] = []
        for layer in present:  # highest precedence first
            for record in _file_records(layer.file, layer.name):
                if record.event_id not in seen and record.event_id not in hidden:
                    seen.add(record.event_id)
                    found.append(record)
        return cls(found)

    def units_of(self, chunk_id: int) -> list[UnitRecord]:
        return [self.units[k] for k in self.by_chunk.get(chunk_id, ())]

    def is_superseded(self, key: UnitKey) -> bool:
        return bool(self.superseded_by.get(key))

    def prerequisites(self, key: UnitKey) -> list[UnitKey]:
        r = self.units.get(key)
        if r is None:
            return []
        return [(r.manifest, d) for d in r.depends_on if (r.manifest, d) in self.units]

    def load_order(self, keys: Iterable[UnitKey]) -> list[UnitRecord]:
        """``keys`` with their transitive ``depends_on`` prerequisites, prerequisites first."""
        return [self.units[k] for k in _load_order(
            [k for k in keys if k in self.units], self.prerequisites)]

"""Three-way merge of append-only layers, the work of ``sediment merge-driver``.

Two branches that both appended to a layer each hold the common ancestor's chunks plus their
own. The merge keeps the ancestor, adds both sides' new chunks (a chunk both sides hold
identically, once), and writes one layer in a fixed order, so the bytes do not depend on
which branch merges into which.

Both branches' writers allocated ids from the same high-water mark, so they gave the same
ids to different chunks, and not necessarily in the same file: ids are unique over a layer
*set* (a user-layer memory of one branch may share its id with a delta chunk of the other).
The renumbering is therefore planned over every layer of the set (:func:`plan`): one side
(the *renumbered* side) gets fresh ids above everything either side used, for each id the
two sides gave to different chunks, and every reference to those ids in that side's new
chunks is rewritten (sources, and the ids inside ``meta.*`` event JSON). Which side is
renumbered is decided from content alone (never from ours/theirs), and every file of the
set is merged with the same plan, so an accepted chunk's copy in user and its decision in
delta keep pointing at each other.

Anything an append never does is a conflict (:class:`MergeConflict`): an ancestor chunk
changed or removed, a base layer (compiled, never merged), layers of different schemas.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import FormatError, SedimentError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.store import refs
from sediment.store.events import MEMORY_EVENT_PREFIX, event_data, is_meta_kind
from sediment.store.ids import PROJECT_IDS, file_high_water, has_id_ranges
from sediment.store.layers import FILE_NAMES, LayerName
from sediment.store.refs import rewrite_ids

__all__ = ["MergeConflict", "Plan", "Side", "merge_layer", "plan", "read_version",
           "rewrite_chunk"]

BASE_FILE = FILE_NAMES[LayerName.BASE]
MEMORY_SAVE = MEMORY_EVENT_PREFIX
"""A memory's save event (``sediment.memory.events.SAVE``), which records its handle."""
SIDES = ("ours", "theirs")


class MergeConflict(SedimentError):
    """The layers cannot be merged without a person deciding (git keeps ours untouched)."""


Side = Mapping[str, bytes]
"""One version of a layer set: file name -> the file's bytes (empty: absent there)."""


def read_version(data: bytes, what: str) -> LayerFile | None:
    """The layer in ``data`` (None when empty: git gives an empty ancestor for a file both
    branches added), or a conflict naming ``what`` when it is not a valid layer."""
    if not data:
        return None
    try:
        f = LayerFile.from_bytes(data, what)
        errors = f.validate()
    except FormatError as exc:
        raise MergeConflict(f"{what} is not a valid layer file: {exc}") from None
    if errors:
        raise MergeConflict(f"{what} is not a valid layer file: {errors[0]}")
    return f


def _chunks(f: LayerFile | None) -> dict[int, Chunk]:
    return {c.id: c for c in f.chunks()} if f is not None and f.chunk_count else {}


def _top(f: LayerFile | None) -> int:
    return file_high_water(f) if f is not None else 0


def _identity(c: Chunk) -> tuple[str, str, int]:
    """What makes two chunks the same logical chunk: an accepted chunk's copy in user keeps
    the delta chunk's id, kind, content and time, not its author or sources."""
    return (c.kind, c.content, c.created_at_ms)


def _digest(side: Side) -> str:
    h = hashlib.sha256()
    for name in sorted(side):
        h.update(name.encode() + b"\0" + hashlib.sha256(side[name]).digest())
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Plan:
    """Which side is renumbered (``"ours"``, ``"theirs"`` or None) and its id map."""

    renumbered: str | None
    ids: Mapping[int, int]
    handles: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """(handle space, old handle) -> new handle, for the renumbered side's memories."""


def _referenced(c: Chunk) -> set[int]:
    found = {s for s in c.sources if isinstance(s, int)}
    data = event_data(c) if is_meta_kind(c.kind) else None
    if data is not None:

        def note(cid: int) -> int:
            found.add(cid)
            return cid

        rewrite_ids(data, note)
    return found


_HANDLE = re.compile(r"[upg][1-9][0-9]{0,9}")


def _handle(c: Chunk) -> tuple[str, str] | None:
    """(space, handle) of a memory's save event: a memory's short name (``g1``, ``u3``)
    counts per owner, or per project for ``g`` (``sediment.memory.events.Fold``)."""
    if c.kind != MEMORY_SAVE:
        return None
    data = event_data(c)
    if data is None:
        return None
    handle, actor = data.get("handle"), data.get("actor")
    if not (isinstance(handle, str) and _HANDLE.fullmatch(handle) and isinstance(actor, str)):
        return None
    return ("*" if handle[0] == "g" else actor), handle


def _handle_plan(new: Mapping[str, Mapping[int, list[tuple[str, Chunk]]]],
                 every: list[Chunk]) -> dict[tuple[str, str], str]:
    """(space, handle) -> a new handle, for each handle both sides gave to different
    memories, above every handle of its space either side used; the plan applies it to
    the renumbered side's save events."""
    given: dict[tuple[str, str], dict[str, set[Any]]] = {}
    for s in SIDES:
        for per_name in new[s].values():
            for _, c in per_name:
                got = _handle(c)
                if got is None:
                    continue
                named = {_identity(m) for sid in c.sources if isinstance(sid, int)
                         for _, m in new[s].get(sid, [])}
                given.setdefault(got, {}).setdefault(s, set()).add(
                    (_identity(c), frozenset(named)))
    top: dict[tuple[str, str], int] = {}
    for c in every:
        got = _handle(c)
        if got is not None:
            key = (got[0], got[1][0])
            top[key] = max(top.get(key, 0), int(got[1][1:]))
    out: dict[tuple[str, str], str] = {}
    for (space, handle), by_side in sorted(given.items(), key=lambda kv: (
            kv[0][0], kv[0][1][0], int(kv[0][1][1:]))):
        if len(by_side) == 2 and by_side["ours"] != by_side["theirs"]:
            key = (space, handle[0])
            top[key] = top.get(key, 0) + 1
            out[(space, handle)] = f"{handle[0]}{top[key]}"
    return out


def plan(ancestor: Side, ours: Side, theirs: Side) -> Plan:
    """The renumbering every file of the set is merged with.

    An id both sides gave to different chunks is renumbered on one side. That side must be
    one whose every file holding such an id (or a reference to one) the other side changed
    too: git merges a file only one side changed without the driver, so only files both
    changed can be rewritten. When both sides qualify, the one whose layers hash higher is
    renumbered, which does not depend on which branch is being merged into which.
    """
    names = sorted(set(ancestor) | set(ours) | set(theirs))
    parsed = {(label, name): read_version(side.get(name, b""), f"{label} {name}")
              for label, side in (("ancestor", ancestor), ("ours", ours), ("theirs", theirs))
              for name in names}
    old: dict[int, Chunk] = {}
    high = 0
    for name in names:
        old.update(_chunks(parsed["ancestor", name]))
        high = max(high, _top(parsed["ancestor", name]))
    new: dict[str, dict[int, list[tuple[str, Chunk]]]] = {}
    changed: dict[str, set[str]] = {}
    for side_name, side in zip(SIDES, (ours, theirs), strict=True):
        per_id: dict[int, list[tuple[str, Chunk]]] = {}
        for name in names:
            base = _chunks(parsed["ancestor", name])
            for cid, c in _chunks(parsed[side_name, name]).items():
                if cid not in base:
                    per_id.setdefault(cid, []).append((name, c))
        new[side_name] = per_id
        changed[side_name] = {n for n in names
                              if side.get(n, b"") != ancestor.get(n, b"")}
    clash = sorted(cid for cid in set(new["ours"]) & set(new["theirs"])
                   if len({_identity(c) for s in SIDES for _, c in new[s][cid]}) > 1)
    every = [c for f in parsed.values() for c in _chunks(f).values()]
    if not clash:
        return _handles_only(new, changed, every, ours, theirs)
    fixed = [cid for cid in clash if cid <= high or cid in old]
    if fixed:
        raise MergeConflict(
            f"both branches wrote different chunks with id {fixed[0]}, an id that existed "
            "before they diverged (an accepted copy, or an id chosen by hand); it cannot be "
            "renumbered: keep one side's layer and redo the other side's change")
    clashing = set(clash)

    def touched(side_name: str) -> set[str]:
        out = set()
        for per_name in new[side_name].values():
            for name, c in per_name:
                if c.id in clashing or _referenced(c) & clashing:
                    out.add(name)
        return out

    other = {"ours": "theirs", "theirs": "ours"}
    eligible = [s for s in SIDES if touched(s) <= changed[other[s]]]
    if not eligible:
        only = {s: sorted(touched(s) - changed[other[s]]) for s in SIDES}
        raise MergeConflict(
            f"both branches gave ids {clash[0]}.. to different chunks, and each wrote them "
            f"into a layer the other branch did not change (ours: {', '.join(only['ours'])}; "
            f"theirs: {', '.join(only['theirs'])}); git merges those files without the "
            "driver, so the ids cannot be renumbered in every file: merge with the "
            "other layer files changed on both sides, or redo one side's change")
    if len(eligible) == 2:
        loser = max(SIDES, key=lambda s: _digest(ours if s == "ours" else theirs))
    else:
        loser = eligible[0]
    start = PROJECT_IDS.high_water([high] + [_top(parsed[s, n]) for s in SIDES for n in names])
    if start + len(clash) > PROJECT_IDS.last:
        raise MergeConflict("chunk ids are exhausted: no free ids are left to renumber into")
    return Plan(loser, {cid: start + 1 + i for i, cid in enumerate(clash)},
                _handle_plan(new, every))


def _handles_only(new: Mapping[str, Mapping[int, list[tuple[str, Chunk]]]],
                  changed: Mapping[str, set[str]], every: list[Chunk], ours: Side,
                  theirs: Side) -> Plan:
    """No id was given twice: still, both sides may have numbered memories' handles alike.
    Renamed on a side whose memory events sit only in files both sides changed; when
    neither side qualifies the handles stay repeated (the fold keeps the earlier one)."""
    other = {"ours": "theirs", "theirs": "ours"}
    eligible = []
    for s in SIDES:
        files = {name for per_name in new[s].values() for name, c in per_name
                 if _handle(c) is not None}
        if files <= changed[other[s]]:
            eligible.append(s)
    for loser in sorted(eligible, key=lambda s: _digest(ours if s == "ours" else theirs),
                        reverse=True)[:1]:
        handles = _handle_plan(new, every)
        if handles:
            return Plan(loser, {}, handles)
    return Plan(None, {})


def rewrite_chunk(c: Chunk, ids: Mapping[int, int],
                  handles: Mapping[tuple[str, str], str] | None = None) -> Chunk:
    """``c`` with its id and every id it references renumbered through ``ids``
    (:func:`sediment.store.refs.rewrite_chunk`), and a memory's handle through
    ``handles``."""
    named = _handle(c) if handles else None
    fields = {"handle": handles[named]} if named is not None and handles and named in handles \
        else None
    return refs.rewrite_chunk(c, ids, fields)


def _rows(f: LayerFile) -> dict[int, npt.NDArray[Any]]:
    emb = np.asarray(f.embeddings)
    return {int(cid): emb[row] for cid, row in zip(f.ids.tolist(), f.rows.tolist(),
                                                   strict=True)}


def _shape(f: LayerFile) -> tuple[int, str, float, str]:
    profile = json.dumps((f.metadata or {}).get("embedding_profile"), sort_keys=True)
    scale = f.quant_scale if f.element_type == "i8" else 1.0
    return (f.dim, f.element_type, scale, profile)


def _metadata(name: str, ancestor: LayerFile | None, ours: LayerFile,
              theirs: LayerFile) -> dict[str, Any]:
    def strip(f: LayerFile | None) -> dict[str, Any] | None:
        if f is None:
            return None
        md = dict(f.metadata or {})
        md.pop("id_high_water", None)
        return md

    a, o, t = strip(ancestor), strip(ours), strip(theirs)
    if o == t or t == a:
        chosen = o
    elif o == a:
        chosen = t
    else:
        raise MergeConflict(f"{name}: both branches changed the layer's metadata differently "
                            "(its embedding profile or settings); merge by hand")
    assert chosen is not None
    return chosen


def _check_ancestor(name: str, side_name: str, ancestor: Mapping[int, Chunk],
                    anc_rows: Mapping[int, npt.NDArray[Any]], chunks: Mapping[int, Chunk],
                    rows: Mapping[int, npt.NDArray[Any]]) -> None:
    for cid, c in ancestor.items():
        got = chunks.get(cid)
        if got is None:
            raise MergeConflict(
                f"{name}: chunk {cid} was removed on {side_name}; append-only layers never "
                "lose chunks (a compaction or rotation rewrote it), so git cannot merge it: "
                "keep one side's file and redo the other side's change")
        if got != c or not np.array_equal(rows[cid], anc_rows[cid]):
            raise MergeConflict(
                f"{name}: chunk {cid} was changed in place on {side_name}; append-only "
                "layers never change a chunk, so git cannot merge it: keep one side's file "
                "and redo the other side's change")


def merge_layer(name: str, ancestor: LayerFile | None, ours: LayerFile | None,
                theirs: LayerFile | None, the_plan: Plan) -> bytearray:
    """One file's merge under ``the_plan``: the ancestor's chunks in their order, then every
    new chunk of both sides by id (renumbered where the plan says), encoded afresh."""
    if PurePosixPath(name).name == BASE_FILE or any(f is not None and has_id_ranges(f.metadata)
                                for f in (ancestor, ours, theirs)):
        raise MergeConflict(
            f"{name} is a compiled base layer: it is never merged; recompile instead "
            "(`sediment compile`) and commit the result")
    present = [f for f in (ours, theirs) if f is not None]
    if len(present) < 2:
        raise MergeConflict(f"{name}: one branch deleted the layer and the other changed it; "
                            "keep one side's file")
    assert ours is not None and theirs is not None
    shapes = {_shape(f) for f in (ancestor, ours, theirs) if f is not None and f.chunk_count}
    if len(shapes) > 1:
        raise MergeConflict(f"{name}: the branches' layers have different schemas (dimension, "
                            "element type, quantisation scale or embedding profile); layers "
                            "of different schemas are never merged (RFC 8.3)")
    base = _chunks(ancestor)
    base_rows = _rows(ancestor) if ancestor is not None else {}
    merged: dict[int, tuple[Chunk, npt.NDArray[Any], str]] = {}
    for side_name, f in zip(SIDES, (ours, theirs), strict=True):
        chunks, rows = _chunks(f), _rows(f)
        _check_ancestor(name, side_name, base, base_rows, chunks, rows)
        mine = the_plan.renumbered == side_name
        ids = the_plan.ids if mine else {}
        handles = the_plan.handles if mine else {}
        for cid, c in chunks.items():
            if cid in base:
                continue
            c2 = rewrite_chunk(c, ids, handles) if ids or handles else c
            row = rows[cid]
            seen = merged.get(c2.id)
            if seen is None:
                merged[c2.id] = (c2, row, side_name)
            elif seen[0] != c2 or not np.array_equal(seen[1], row):
                raise MergeConflict(
                    f"{name}: both branches hold chunk {c2.id}, with different records; "
                    "keep one side's file and redo the other side's change")
    order = [*base.values()] + [merged[k][0] for k in sorted(merged)]
    vectors = [base_rows[c.id] for c in base.values()] + [merged[k][1] for k in sorted(merged)]
    template = ancestor if ancestor is not None and ancestor.chunk_count else ours
    metadata = _metadata(name, ancestor, ours, theirs)
    high = max([_top(f) for f in (ancestor, ours, theirs)] + [c.id for c in order] + [0])
    if the_plan.renumbered is not None and the_plan.ids:
        high = max(high, *the_plan.ids.values())
    if "id_high_water" in (ours.metadata or {}) or "id_high_water" in (theirs.metadata or {}):
        metadata["id_high_water"] = high
    dim = template.dim
    matrix = (np.stack(vectors) if vectors
              else np.zeros((0, dim), dtype=np.int8 if template.element_type == "i8"
                            else np.float32))
    flags = [is_meta_kind(c.kind) and not np.asarray(v).any() for c, v in zip(
        order, vectors, strict=True)]
    return encode_layer(order, matrix, dim=dim, element_type=template.element_type,
                        quant_scale=template.quant_scale if template.element_type == "i8"
                        else None, metadata=metadata or None,
                        vectorless=flags if any(flags) else None)


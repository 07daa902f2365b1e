"""Recompaction: merge base and user into a new immutable base (RFC 14, 15.6).

The output is a new file (never an input), written atomically, with deterministic bytes:
chunks sorted by id, the user version of an id replacing the base version, sources kept as
they are, vectors copied row for row (never re-embedded), metadata from the base with its
embedding profile, an ``id_high_water`` at least that of either input, and the inputs'
sha256 (no timestamps). ``meta.*`` events are dropped by default, and the chunks they hide
(superseded or forgotten) with them, so dropping a forget never brings a chunk back;
``keep_events`` keeps both. Memory state (``store.events.about_memories``) always survives:
memories, their versions and the events that fold into their state are kept (``sediment
memory purge`` is how forgotten memory text leaves the disk).

With ``rotate``, all under the layers' write locks and in this order: the output is written,
it replaces the live base (the old base kept as ``AGENTS.<stamp>.db``), and only then are
user and delta archived and reset (``rotate.py``). Every point in between is a set that
still shows everything accepted (the new base holds the user layer's chunks under the same
ids), and running the same command again finishes the job: an ``out`` left by an
interrupted rotation (the same bytes as the live base, or as this merge) is not an error.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import NotFoundError, SchemaMismatchError, ValidationError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.format.profile import PROFILE_KEYS, check_compatible
from sediment.format.writer import quantize
from sediment.review.rotate import (
    Rotation,
    archive_and_reset,
    install_base,
    utc_stamp,
)
from sediment.store import LayerName, LayerSet
from sediment.store.atomic import remove_stale_temporaries, write_output
from sediment.store.events import (
    MEMORY_KIND_PREFIX,
    about_memories,
    fold_proposals,
    hidden_ids,
    is_meta_kind,
    iter_events,
)
from sediment.store.ids import file_high_water
from sediment.store.layerset import same_file, vectorless_events


@dataclass(frozen=True, slots=True)
class CompactReport:
    out: str
    chunks: int
    from_base: int
    from_user: int
    overridden: int
    events_dropped: int
    hidden_dropped: int
    requantized: int
    bytes: int
    sha256: str
    id_high_water: int
    rotated: tuple[Rotation, ...] = field(default=())
    pending_archived: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"out": self.out, "chunks": self.chunks, "from_base": self.from_base,
                "from_user": self.from_user, "overridden": self.overridden,
                "events_dropped": self.events_dropped, "hidden_dropped": self.hidden_dropped,
                "requantized": self.requantized, "bytes": self.bytes, "sha256": self.sha256,
                "id_high_water": self.id_high_water,
                "rotated": [r.to_dict() for r in self.rotated],
                "pending_proposals_archived": self.pending_archived}


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _rows(f: LayerFile, positions: list[int]) -> npt.NDArray[Any]:
    return np.asarray(f.embeddings[f.rows[np.asarray(positions, dtype=np.int64)]])


def check_schema(base: LayerFile, user: LayerFile) -> None:
    """Vectors are copied, so both layers must share dim, element type and profile."""
    if (base.chunk_count or base.dim) and (user.chunk_count or user.dim) \
            and (base.dim, base.element_type) != (user.dim, user.element_type):
        raise SchemaMismatchError(
            f"base {base.path} ({base.dim} dims, {base.element_type}) and user {user.path} "
            f"({user.dim} dims, {user.element_type}) do not share a schema (RFC 8.3); they "
            "cannot be compacted together")
    check_compatible(base.embedding_profile, user.embedding_profile,
                     a_name=f"base {base.path}", b_name=f"user {user.path}",
                     consequence="vectors are copied, not re-embedded, so they cannot be "
                                 "compacted together")


def merge(base: LayerFile, user: LayerFile, *, keep_events: bool = False,
          provenance: dict[str, str] | None = None) -> tuple[bytearray, dict[str, int]]:
    """The bytes of the merged base and what went into it. Pure: reads, never writes."""
    check_schema(base, user)
    files = {LayerName.BASE: base, LayerName.USER: user}
    chunks = {n: list(f.chunks()) for n, f in files.items()}
    hidden: set[int] = set()
    memories = {c.id for cs in chunks.values() for c in cs
                if c.kind.startswith(MEMORY_KIND_PREFIX)}
    if not keep_events:
        hidden = hidden_ids(iter_events((n, c) for n, cs in chunks.items() for c in cs))
        hidden -= memories
    picked: dict[int, tuple[LayerName, int, Chunk]] = {}
    stats = dict.fromkeys(("from_base", "from_user", "overridden", "events_dropped",
                           "hidden_dropped", "requantized"), 0)
    for name in (LayerName.BASE, LayerName.USER):
        for pos, c in enumerate(chunks[name]):
            if not keep_events and is_meta_kind(c.kind) and not about_memories(c, memories):
                stats["events_dropped"] += 1
                continue
            if c.id in picked:
                stats["overridden"] += 1
            picked[c.id] = (name, pos, c)
    for cid in sorted(hidden & picked.keys()):
        del picked[cid]
        stats["hidden_dropped"] += 1
    order = sorted(picked)
    etype = base.element_type if base.chunk_count else user.element_type
    dim = base.dim if base.chunk_count or not user.chunk_count else user.dim
    scale = base.quant_scale if base.chunk_count else user.quant_scale
    matrix = np.zeros((len(order), dim), dtype=np.int8 if etype == "i8" else np.float32)
    for name, f in files.items():
        idx = [i for i, cid in enumerate(order) if picked[cid][0] is name]
        stats["from_base" if name is LayerName.BASE else "from_user"] = len(idx)
        if not idx:
            continue
        rows = _rows(f, [picked[order[i]][1] for i in idx])
        if etype == "i8" and f.quant_scale != scale:
            rows, _ = quantize(rows.astype(np.float32) * np.float32(f.quant_scale), scale)
            stats["requantized"] += len(idx)
        matrix[idx] = rows
    metadata: dict[str, Any] = dict(base.metadata or {})
    for key in PROFILE_KEYS:
        if key not in metadata and key in (user.metadata or {}):
            metadata[key] = (user.metadata or {})[key]
    metadata.setdefault("v", 1)
    metadata["id_high_water"] = max(file_high_water(base), file_high_water(user),
                                    max(order, default=0))
    if provenance:
        metadata["compacted_from"] = dict(provenance)
    kept = [picked[cid][2] for cid in order]
    data = encode_layer(kept, matrix, dim=dim, element_type=etype,
                        quant_scale=scale if etype == "i8" else None, metadata=metadata,
                        vectorless=vectorless_events(kept, matrix))
    stats["id_high_water"] = metadata["id_high_water"]
    stats["chunks"] = len(order)
    return data, stats


def _check_out(out: Path, inputs: Sequence[Path], force: bool) -> None:
    for p in inputs:
        if same_file(out, p):
            raise ValidationError(f"--out {out} is one of the inputs ({p}); compaction writes "
                                  "a new file and never touches its inputs")
    if out.is_dir():
        raise ValidationError(f"--out {out} is a directory")
    if out.is_file() and not force:
        raise ValidationError(f"{out} already exists; pass --force to overwrite it")


def _check_rerun(out: Path, base: Path, data: bytes | bytearray, force: bool) -> None:
    """With ``rotate``, an existing ``out`` is this rotation's own output, left by an
    interruption, when it holds the live base's bytes or this merge's; anything else needs
    ``force``."""
    if force or not out.is_file():
        return
    left = _sha256(out)
    if left not in (_sha256(base), hashlib.sha256(data).hexdigest()):
        raise ValidationError(f"{out} already exists and is not what an interrupted rotation "
                              "left; pass --force to overwrite it")


def _pending(delta: Path | None) -> int:
    if delta is None or not delta.exists():
        return 0
    states = fold_proposals(LayerSet({LayerName.DELTA: delta}).events())
    return sum(1 for s in states.values() if s.status == "pending")


def compact(base: Path, user: Path, out: Path, *, keep_events: bool = False,
            force: bool = False, rotate: bool = False, delta: Path | None = None,
            lock_timeout: float = 30.0, stamp: str | None = None) -> CompactReport:
    """Write the merge of ``base`` and ``user`` to ``out``; with ``rotate``, then archive
    and reset ``user`` and ``delta`` (when given and present)."""
    for p, what in ((base, "base"), (user, "user")):
        if not p.exists():
            raise NotFoundError(f"{p}: no such layer file (the {what} layer to compact)")
    resets = [user, *([delta] if delta is not None else [])] if rotate else []
    if rotate and str(out) == "-":
        raise ValidationError("--rotate installs the new base, so --out must be a file, "
                              "not standard output")
    _check_out(out, [base, user, *resets], force or rotate)
    lock_set = LayerSet({LayerName.USER: user, LayerName.DELTA: delta}, lock_timeout=lock_timeout)
    locked = lock_set.transaction() if resets else contextlib.nullcontext()
    with locked:
        base_f, user_f = LayerFile.open(base), LayerFile.open(user)
        data, stats = merge(base_f, user_f, keep_events=keep_events,
                            provenance={"base_sha256": _sha256(base),
                                        "user_sha256": _sha256(user)})
        if rotate:
            _check_rerun(out, base, data, force)
            for p in (out, base, *resets):
                remove_stale_temporaries(p)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_output(out, data)
        rotated: list[Rotation] = []
        pending = _pending(delta) if rotate else 0
        if resets:
            when = stamp or utc_stamp()
            installed = install_base(base, data, stamp=when)
            rotated.append(installed)
            present = [LayerFile.open(p) for p in resets if p.exists()]
            top = max([stats["id_high_water"], *(file_high_water(f) for f in present)])
            for p in resets:
                r = archive_and_reset(p, id_high_water=top, stamp=when)
                if r is not None:
                    rotated.append(r)
    return CompactReport(
        str(out), stats["chunks"], stats["from_base"], stats["from_user"],
        stats["overridden"], stats["events_dropped"], stats["hidden_dropped"],
        stats["requantized"], len(data), hashlib.sha256(data).hexdigest(),
        stats["id_high_water"], tuple(rotated), pending)

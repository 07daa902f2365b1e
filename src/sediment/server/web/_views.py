"""What each page shows, gathered from the same functions the CLI calls.

The review queue is ``list_proposals`` + ``inspect_chunk`` + ``diff_layers`` (what
``sediment proposals show`` and ``sediment diff`` print); decisions are ``accept`` and
``reject``; search is ``ContextService.search`` with ``explain`` (``sediment search
--explain``). Nothing here decides anything: it selects, orders and pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from sediment.errors import NotFoundError, SedimentError
from sediment.review import (
    DEFAULT_THRESHOLD,
    ChunkReport,
    DiffReport,
    Match,
    ProposalView,
    diff_layers,
    inspect_chunk,
    list_proposals,
    verify,
)
from sediment.review.signing import signature_path
from sediment.store import PRECEDENCE, LayerName, LayerSet
from sediment.store.events import is_meta_kind

PER_PAGE = 10
MAX_PAGE = 10_000


def when(ms: int) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a longer list (1-based)."""

    number: int
    size: int
    total: int

    @property
    def count(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def start(self) -> int:
        return (self.number - 1) * self.size

    def slice(self, items: list[Any]) -> list[Any]:
        return items[self.start:self.start + self.size]


def page_number(raw: str | None) -> int:
    try:
        n = int(raw or "1")
    except ValueError:
        return 1
    return min(max(n, 1), MAX_PAGE)


def without_local(ls: LayerSet) -> LayerSet:
    """The set ``sediment diff`` compares: the local layer is not reviewed."""
    paths: dict[LayerName, Path | None] = {n: p for n, p in ls.paths.items()
                                          if n is not LayerName.LOCAL}
    return LayerSet(paths)


@dataclass(frozen=True, slots=True)
class QueueItem:
    view: ProposalView
    report: ChunkReport | None
    overrides: list[tuple[str, Any]]
    matches: list[Match]


def _holder(ls: LayerSet, view: ProposalView) -> Path | None:
    for name in (LayerName.DELTA, LayerName.LOCAL):
        layer = ls.layer(name)
        if layer is not None and layer.file.get(view.context_id) is not None:
            return layer.path
    return None


def queue(ls: LayerSet, root: Path, page: int, size: int = PER_PAGE
          ) -> tuple[list[QueueItem], Page]:
    """Pending proposals, newest first, each with what ``proposals show`` and ``diff`` say."""
    pending = sorted(list_proposals(ls, "pending"),
                     key=lambda v: (v.proposed_at_ms, v.proposal_id), reverse=True)
    pg = Page(min(page, max(1, -(-len(pending) // size))), size, len(pending))
    shown = pg.slice(pending)
    diff: DiffReport | None = None
    if shown and ls.layer(LayerName.DELTA) is not None:
        diff = diff_layers(without_local(ls))
    items = []
    for v in shown:
        path = _holder(ls, v)
        report = inspect_chunk(path, v.context_id, layerset=ls, root=root) if path else None
        overrides = [(n, c) for n, c in (report.versions if report else ())
                     if n in (LayerName.BASE.value, LayerName.USER.value)]
        matches = [m for m in (diff.conflicts + diff.duplicates if diff else ())
                   if m.delta.id == v.context_id]
        items.append(QueueItem(v, report, overrides, matches))
    return items, pg


def _signature(path: Path, pubkey: Path | None) -> str:
    sig = signature_path(path)
    if not sig.exists():
        return "unsigned"
    if pubkey is None:
        return f"signature {sig.name} present; not verified (no public key given)"
    try:
        return f"signature verifies ({verify(path, pubkey)})"
    except SedimentError as exc:
        return f"signature does NOT verify: {exc}"


def layers(ls: LayerSet, pubkey: Path | None) -> list[dict[str, Any]]:
    """Each layer in precedence order: counts by kind, events, profile, signature."""
    rows = []
    for name in PRECEDENCE:
        path = ls.paths.get(name)
        layer = ls.layer(name)
        row: dict[str, Any] = {"name": name.value, "path": str(path) if path else None,
                               "present": layer is not None}
        if layer is not None:
            f = layer.file
            kinds: dict[str, int] = {}
            if f.chunk_count:
                sids, counts = np.unique(f.records["kind"], return_counts=True)
                kinds = {f.string(int(i)): int(c)
                         for i, c in zip(sids.tolist(), counts.tolist(), strict=True)}
            row.update(chunks=f.chunk_count,
                       events=sum(c for k, c in kinds.items() if is_meta_kind(k)),
                       kinds=sorted(kinds.items()), bytes=f.size,
                       vectors=f"{f.dim} x {f.element_type}", profile=layer.profile,
                       signature=_signature(layer.path, pubkey))
        rows.append(row)
    return rows


def diff(ls: LayerSet, threshold: float = DEFAULT_THRESHOLD) -> DiffReport | None:
    """``sediment diff``, or None without a delta layer."""
    if ls.layer(LayerName.DELTA) is None:
        return None
    try:
        return diff_layers(without_local(ls), threshold)
    except NotFoundError:
        return None

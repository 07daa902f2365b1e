"""What the layers and search pages show, gathered from the same functions the CLI calls
(the review queue is :mod:`._review`).

The layers page is each layer's summary and ``diff_layers`` (what ``sediment layers`` and
``sediment diff`` print), over the ``LayerStore`` protocol, so the page reads the layer
files and the team server alike; search is ``ContextService.search`` with ``explain``
(``sediment search --explain``). Nothing here decides anything: it selects, orders and pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sediment.errors import NotFoundError, SedimentError
from sediment.ops.read import readable_layer
from sediment.review import DEFAULT_THRESHOLD, DiffReport, diff_layers, verify
from sediment.review.diff import without_local
from sediment.review.signing import signature_path
from sediment.store import PRECEDENCE, LayerName, LayerStore
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


FILE_ONLY = ("Signatures do not apply here: signatures are file-only (a signature covers the "
             "bytes of a layer file; the team server's layers are rows, protected by the "
             "database's access control and the tokens' roles).")


def _signature(ls: LayerStore, name: LayerName, pubkey: Path | None) -> str | None:
    """The layer file's signature status; None on a backend without files (the page says
    :data:`FILE_ONLY` once)."""
    files = ls.layer_files()
    if files is None:
        return None
    path = files.paths[name]
    assert path is not None
    sig = signature_path(path)
    if not sig.exists():
        return "unsigned"
    if pubkey is None:
        return f"signature {sig.name} present; not verified (no public key given)"
    try:
        return f"signature verifies ({verify(path, pubkey)})"
    except SedimentError as exc:
        return f"signature does NOT verify: {exc}"


def _bytes(ls: LayerStore, name: LayerName) -> int | None:
    """A layer file's size; None on a backend whose layers are not files."""
    files = ls.layer_files()
    layer = files.layer(name) if files is not None else None
    return layer.file.size if layer is not None else None


def layers(ls: LayerStore, pubkey: Path | None, actor: str | None
           ) -> list[dict[str, Any]]:
    """Each layer in precedence order as ``actor`` reads it (``ops.read.readable_layer``):
    counts by kind, events, profile, signature."""
    rows = []
    for name in PRECEDENCE:
        got = readable_layer(ls, name, actor, max_ids=0)
        row: dict[str, Any] = {"name": name.value, "path": ls.location(name),
                               "present": got is not None}
        if got is not None:
            summary, kinds = got
            row.update(chunks=summary.chunks,
                       events=sum(c for k, c in kinds.items() if is_meta_kind(k)),
                       kinds=sorted(kinds.items()), bytes=_bytes(ls, name),
                       vectors=f"{summary.dim} x {summary.element_type}",
                       profile=summary.profile, signature=_signature(ls, name, pubkey))
        rows.append(row)
    return rows


def diff(ls: LayerStore, threshold: float = DEFAULT_THRESHOLD) -> DiffReport | None:
    """``sediment diff``, or None without a delta layer."""
    if not ls.present([LayerName.DELTA]):
        return None
    try:
        return diff_layers(without_local(ls), threshold)
    except NotFoundError:
        return None

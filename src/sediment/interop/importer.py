"""An import: every item read and checked first, then saved through the memory service.

The first pass reads the whole input and checks every item as a save would (text,
category, size, credentials), so a bad line stops the import before anything is written,
naming ``path:line``. The second pass reads it again and saves item by item, keeping
nothing but the chunk ids of entities (so relations can point at them): memory stays
bounded by the entities, not the input. Each save is its own commit and dedups against
what is stored (identical text answers ``exists``; nothing else is merged: an import
keeps every memory separate, the reviewer decides), so an interrupted import is resumed
by running it again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sediment.credentials import refuse_credentials
from sediment.errors import ValidationError
from sediment.interop.model import FormatError, Item, Reading, fail
from sediment.memory import MemoryService
from sediment.memory.model import check_actor, check_category, check_content, check_scope
from sediment.memory.service import MAX_ORIGIN_CHARS

Reader = Callable[[Path, Path, Reading], Iterator[Item]]


@dataclass(slots=True)
class ImportReport:
    format: str
    path: str
    scope: str
    dry_run: bool
    created: int = 0
    new: int = 0
    """Dry run: how many would be created."""
    existing: int = 0
    actors: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "path": self.path, "scope": self.scope,
                "dry_run": self.dry_run, "created": self.created, "new": self.new,
                "existing": self.existing,
                "actors": sorted(self.actors), "notes": list(self.notes)}


def check(item: Item, actor: str) -> None:
    """Raise a ``path:line`` error for what a save of ``item`` would refuse."""
    try:
        check_actor(item.actor or actor)
        check_content(item.content)
        check_category(item.category)
        refuse_credentials(item.content, "the text")
        text = json.dumps(item.origin, ensure_ascii=False, sort_keys=True)
        if len(text) > MAX_ORIGIN_CHARS:
            raise ValidationError(f"its fields take {len(text)} characters of JSON; an "
                                  f"import keeps at most {MAX_ORIGIN_CHARS}")
        refuse_credentials(text, "its fields")
    except FormatError:
        raise
    except ValidationError as exc:
        raise fail(item.source, str(exc)) from None


def run_import(service: MemoryService, fmt: str, read: Reader, path: Path, *, actor: str,
               scope: str, dry_run: bool = False, root: Path | None = None,
               on_item: Callable[[dict[str, Any]], None] | None = None) -> ImportReport:
    """Import ``path`` as ``actor`` into ``scope``; ``on_item`` hears of every item
    (status ``created``, ``exists``, or with ``dry_run`` ``new`` / ``exists``)."""
    check_actor(actor)
    check_scope(scope)
    base = root or Path.cwd()
    report = ImportReport(fmt, str(path), scope, dry_run)
    reading = Reading()
    for item in read(path, base, reading):
        check(item, actor)
    report.notes = reading.notes
    keys: dict[tuple[str, str], int] = {}
    for item in read(path, base, Reading()):
        who = item.actor or actor
        report.actors.add(who)
        refs = [str(keys[(who, k)]) for k in item.refs if (who, k) in keys]
        status, shown, chunk = _save(service, item, who, scope, refs, dry_run)
        if status == "created":
            report.created += 1
        elif status == "new":
            report.new += 1
        else:
            report.existing += 1
        if item.key is not None and chunk is not None:
            keys[(who, item.key)] = chunk
        if on_item is not None:
            on_item({"status": status, "id": shown, "actor": who, "category": item.category,
                     "content": item.content, "source": item.source,
                     "context": item.context})
    return report


def _save(service: MemoryService, item: Item, actor: str, scope: str, refs: list[str],
          dry_run: bool) -> tuple[str, str | None, int | None]:
    """(status, the memory's id, its chunk id) for one item."""
    for text in (item.content, item.bare):
        if text is None or (not dry_run and text == item.content):
            continue
        same = service.existing(actor, text, scope)
        if same is not None:
            return "exists", same.shown, same.ref.id
    if dry_run:
        return "new", None, None
    out = service.save(actor, item.content, item.category, item.learned, scope, item.context,
                       [item.source, *refs], keep_separate=True, human=True,
                       origin=item.origin)
    return out["status"], str(out["id"]), int(out["chunk_id"])

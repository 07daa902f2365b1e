"""An export: the memories of one or more actors, written in a peer's format.

A format writes either one file (``--out FILE``, ``-`` for standard output) or a tree of
files under a directory (``--out DIR``: notes, instruction files), each written
atomically. Paths inside the tree come from the imports' origins, checked again here: a
path that would leave the directory is never written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from sediment.errors import ValidationError
from sediment.memory import Memory, MemoryService
from sediment.store.atomic import write_output


def gather(service: MemoryService, actors: Sequence[str], scope: str | None,
           category: str | None) -> list[Memory]:
    """Every active memory of ``actors`` (once each, global ones too), in write order.
    Each actor's user store numbers its own chunks, so a user memory is known by its
    owner and id."""
    seen: set[tuple[str, str, int]] = set()
    out: list[Memory] = []
    for actor in actors:
        for m in service.active(actor, scope):
            key = (m.ref.store, m.actor if m.ref.store == "u" else "", m.ref.id)
            if key in seen or (category is not None and m.category != category):
                continue
            seen.add(key)
            out.append(m)
    return out


def inside(out: Path, rel: str) -> Path:
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise ValidationError(f"{rel!r} is not a path inside {out}; not written")
    return out.joinpath(*p.parts)


def write_tree(out: Path, files: dict[str, bytes]) -> list[str]:
    """Write ``files`` (relative POSIX paths) under ``out``; return what was written."""
    if out.exists() and not out.is_dir():
        raise ValidationError(f"{out} is a file; this format writes a directory of files")
    targets = [(rel, inside(out, rel)) for rel in sorted(files)]
    for rel, target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_output(target, files[rel])
    return [rel for rel, _ in targets]



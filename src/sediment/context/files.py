"""The context store on Sediment's layer files (the first ``ContextStore``).

One directory per project (default ``<layer dir>/.sediment/context``): the active items
and every event in ``AGENTS.local.db``, archived items in ``archive/AGENTS.archive-<day>.db``
(one RFC layer file per day, searched only on request). Archiving and dropping are
compactions: the active file is rewritten without the items (appending a forget event never
shrinks a file), through the same atomic replace as every write, under the store's lock.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from sediment.context.store import ITEM_PREFIX, NewEvent, NewItem, StoredEvent, StoredItem
from sediment.errors import SchemaMismatchError, ValidationError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.format.profile import CACHE_KEY_ALG, I8_SCALE, new_element_type
from sediment.store import LayerName, LayerSet, NewChunk
from sediment.store.atomic import atomic_write
from sediment.store.commit import resolve_new
from sediment.store.events import FORGET, META_PREFIX, SUPERSEDE, event_content, event_data
from sediment.store.ids import CONTEXT_IDS
from sediment.store.layerset import vectorless_events
from sediment.store.refs import renumbered_into

T = TypeVar("T")
EVENT_PREFIX = META_PREFIX + "context"
ARCHIVE_DIR = "archive"


def is_context_event(kind: str) -> bool:
    return kind.startswith(EVENT_PREFIX) or kind in (SUPERSEDE, FORGET)


def _rows(f: LayerFile, start: int = 0) -> tuple[list[Chunk], npt.NDArray[np.float32]]:
    """The chunks of ``f`` from position ``start`` on, in file (commit) order, and their
    dequantised vectors."""
    pos = np.arange(start, f.chunk_count)
    matrix = np.asarray(f.embeddings[f.rows[pos]], dtype=np.float32)
    if f.element_type == "i8":
        matrix *= np.float32(f.quant_scale)
    return f.chunks_at(pos), matrix


def _read(f: LayerFile, start: int = 0) -> tuple[list[StoredItem], list[StoredEvent]]:
    """The items and events of ``f`` from position ``start`` on, in file (commit) order."""
    if f.chunk_count <= start:
        return [], []
    chunks, matrix = _rows(f, start)
    items: list[StoredItem] = []
    events: list[StoredEvent] = []
    for i, c in enumerate(chunks):
        if c.kind.startswith(ITEM_PREFIX):
            items.append(StoredItem(c, matrix[i]))
        elif is_context_event(c.kind) and (data := event_data(c)) is not None:
            events.append(StoredEvent(c.id, c.kind, c.created_at_ms, data, c.sources))
    return items, events


@dataclass(frozen=True, slots=True)
class ContextPart:
    """One file of a context store, whole: the active file (``day`` None) or the archive of
    ``day``; its chunks in file order and their vectors (zero rows for events)."""

    day: str | None
    chunks: list[Chunk]
    vectors: npt.NDArray[np.float32]


def _per_version(cache: dict[tuple[str, int, int], T], path: Path, read: Callable[[], T]) -> T:
    """``read()`` of ``path``'s current version (its mtime and size), kept in ``cache``,
    which holds one version of each path."""
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    got = cache.get(key)
    if got is None:
        for old in [k for k in list(cache) if k[0] == key[0]]:
            cache.pop(old, None)
        got = cache[key] = read()
    return got


ARCHIVE_NAME = re.compile(r"^AGENTS\.archive-(\d{4}-\d{2}-\d{2})\.db$")


class FileContextStore:
    """Context items and events in one directory of layer files."""

    def __init__(self, directory: Path, *, profile: dict[str, Any] | None, dim: int,
                 embedder_metadata: dict[str, Any] | None = None,
                 lock_timeout: float = 30.0) -> None:
        self.directory = Path(directory)
        self.profile = profile
        self.dim = dim
        self.embedder_metadata = embedder_metadata or {}
        self.layers = LayerSet({LayerName.LOCAL: self.directory / "AGENTS.local.db"},
                               lock_timeout=lock_timeout, ids=CONTEXT_IDS)
        self._cache: tuple[Hashable, list[StoredItem], list[StoredEvent], int, int] | None \
            = None
        self._archives: dict[tuple[str, int, int],
                             tuple[list[StoredItem], list[StoredEvent]]] = {}
        self._high_waters: dict[tuple[str, int, int], int] = {}

    @property
    def active_path(self) -> Path:
        return self.directory / "AGENTS.local.db"

    def _active(self) -> tuple[list[StoredItem], list[StoredEvent]]:
        """Parsed once per chunk: an append only parses what it added (the file keeps its
        old chunks as a prefix); a compaction rereads the file."""
        la = self.layers.layer(LayerName.LOCAL)
        stamp = la.stamp if la is not None else None
        c = self._cache
        if c is not None and c[0] == stamp:
            return c[1], c[2]
        if la is None:
            self._cache = (stamp, [], [], 0, 0)
            return [], []
        f = la.file
        if c is not None and 0 < c[3] <= f.chunk_count and int(f.ids[c[3] - 1]) == c[4]:
            new_items, new_events = _read(f, c[3])
            items, events = c[1] + new_items, c[2] + new_events
        else:
            items, events = _read(f)
        n = f.chunk_count
        self._cache = (stamp, items, events, n, int(f.ids[n - 1]) if n else 0)
        return items, events

    def append(self, items: Sequence[NewItem], events: Sequence[NewEvent]) -> list[int]:
        self.directory.mkdir(parents=True, exist_ok=True)
        with self.layers.transaction():
            ids = list(self.layers.ids.next_ids(
                self.layers.written_high_water(self._archive_high_waters()),
                len(items) + len(events)))
            chunks: list[NewChunk] = []
            vectors: list[npt.NDArray[np.float32]] = []
            for cid, it in zip(ids, items, strict=False):
                chunks.append(NewChunk(it.kind, it.content, it.author, 1.0, it.sources, id=cid))
                vectors.append(np.asarray(it.vector, dtype=np.float32).reshape(-1))
            zero = np.zeros(self.dim, dtype=np.float32)
            for cid, e in zip(ids[len(items):], events, strict=True):
                data = resolve_new(e.data, ids)
                subjects = tuple(int(s) for s in resolve_new(list(e.subjects), ids))
                chunks.append(NewChunk(e.kind, event_content(**data), e.author, 1.0, subjects,
                                       id=cid))
                vectors.append(zero)
            if chunks:
                self.layers.append(LayerName.LOCAL, chunks, np.stack(vectors),
                                   profile=self.profile,
                                   embedder_metadata=self.embedder_metadata,
                                   allowed=(LayerName.LOCAL,),
                                   element_type=self._element_type())
        return ids[:len(items)]

    def items(self, *, archived: bool = False) -> list[StoredItem]:
        out: list[StoredItem] = []
        for path in self._archive_paths() if archived else ():
            out.extend(self._archive(path)[0])
        return out + self._active()[0]

    def _archive(self, path: Path) -> tuple[list[StoredItem], list[StoredEvent]]:
        def read() -> tuple[list[StoredItem], list[StoredEvent]]:
            items, events = _read(LayerFile.open(path))
            return [StoredItem(i.chunk, i.vector, True, path.name) for i in items], events

        return _per_version(self._archives, path, read)

    def events(self) -> list[StoredEvent]:
        """The archives' events (older) then the active file's, each in commit order."""
        out: list[StoredEvent] = []
        for path in self._archive_paths():
            out.extend(self._archive(path)[1])
        return out + self._active()[1]

    def _archive_path(self, day: str) -> Path:
        return self.directory / ARCHIVE_DIR / f"AGENTS.archive-{day}.db"

    def _archive_paths(self) -> list[Path]:
        d = self.directory / ARCHIVE_DIR
        return sorted(d.glob("AGENTS.archive-*.db")) if d.is_dir() else []

    def _archive_high_waters(self) -> list[int]:
        """Each archive's largest id of the context range, used or ever used, read once per
        archive file version (every append asks: ids must stay unique across the active
        file and archives)."""
        def read(path: Path) -> int:
            f = LayerFile.open(path)
            return self.layers.ids.high_water(
                [int((f.metadata or {}).get("id_high_water") or 0), *f.ids.tolist()])

        return [_per_version(self._high_waters, p, partial(read, p))
                for p in self._archive_paths()]

    def _element_type(self) -> str:
        """i8 for a new store whose embedder gives unit vectors (scale 1/127, four times
        fewer bytes per append than f32); a store keeps the type its active file has."""
        la = self.layers.layer(LayerName.LOCAL)
        if la is not None and la.file.embedding_info.rows:
            return la.file.element_type
        return new_element_type(self.profile)

    def _rewrite(self, path: Path, chunks: list[Chunk], matrix: npt.NDArray[np.float32],
                 high_water: int, metadata: dict[str, Any], element_type: str) -> None:
        """Write ``path`` anew; i8 vectors are requantised at 1/127, which gives back the
        same integers for vectors read from an i8 file at that scale."""
        md = dict(metadata)
        md["id_high_water"] = max(high_water, int(md.get("id_high_water") or 0))
        matrix = matrix.reshape(len(chunks), self.dim)
        data = encode_layer(chunks, matrix, dim=self.dim, metadata=md,
                            element_type=element_type,
                            quant_scale=I8_SCALE if element_type == "i8" else None,
                            vectorless=vectorless_events(chunks, matrix))
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)

    @staticmethod
    def _split(f: LayerFile, moves: Callable[[Chunk], bool]
               ) -> tuple[list[Chunk], npt.NDArray[np.float32], list[Chunk],
                          npt.NDArray[np.float32]]:
        """The chunks of ``f`` that stay and those that ``moves``, each with its vectors."""
        chunks, matrix = _rows(f)
        moved = [i for i, c in enumerate(chunks) if moves(c)]
        gone = set(moved)
        kept = [i for i in range(len(chunks)) if i not in gone]
        return ([chunks[i] for i in kept], matrix[kept], [chunks[i] for i in moved],
                matrix[moved])

    def _active_file(self) -> LayerFile | None:
        la = self.layers.layer(LayerName.LOCAL)
        return la.file if la is not None and la.file.chunk_count else None

    @staticmethod
    def _top(f: LayerFile) -> int:
        """The largest id ``f`` used or ever used."""
        return max(int((f.metadata or {}).get("id_high_water") or 0), int(f.ids.max()))

    def archive(self, ids: Sequence[int], day: str) -> int:
        if not ids:
            return 0
        drop = set(ids)
        with self.layers.transaction():
            f = self._active_file()
            if f is None:
                return 0
            kept, kmat, moved, mmat = self._split(
                f, lambda c: c.id in drop or (c.kind.startswith(EVENT_PREFIX)
                                              and any(s in drop for s in c.sources)))
            if not moved:
                return 0
            top, md = self._top(f), dict(f.metadata or {})
            path = self._archive_path(day)
            old = LayerFile.open(path) if path.exists() else None
            chunks, vectors = _rows(old) if old is not None else ([], mmat[:0])
            etype = self._element_type()
            self._rewrite(path, chunks + moved, np.concatenate([vectors, mmat]), top, md,
                          old.element_type if old is not None else etype)
            self._rewrite(self.active_path, kept, kmat, top, md, etype)
        self._cache = None
        return sum(1 for c in moved if c.kind.startswith(ITEM_PREFIX))

    def drop(self, ids: Sequence[int]) -> int:
        """Rewrite the active file, and each archive file holding any of ``ids``,
        without those items (their events stay)."""
        if not ids:
            return 0
        drop = set(ids)
        count = 0
        with self.layers.transaction():
            active = self._active_file()
            top = self._top(active) if active is not None else 0
            files = [(self.active_path, active)] if active is not None else []
            for path, f in [*files, *((p, LayerFile.open(p)) for p in self._archive_paths())]:
                if not f.chunk_count or not np.isin(f.ids, list(drop)).any():
                    continue
                kept, kmat, gone, _ = self._split(f, lambda c: c.id in drop)
                count += len(gone)
                self._rewrite(path, kept, kmat, max(top, int(f.ids.max())),
                              dict(f.metadata or {}), self._element_type()
                              if path == self.active_path else f.element_type)
        self._cache = None
        return count

    def parts(self) -> list[ContextPart]:
        """Every file of the store, archives (oldest day first) then the active file: what
        moving the store elsewhere reads (``sediment push --context``)."""
        out: list[ContextPart] = []
        for day, path in [*((self._day(p), p) for p in self._archive_paths()),
                          (None, self.active_path)]:
            if not path.exists():
                continue
            f = LayerFile.open(path)
            if f.chunk_count and f.dim != self.dim:
                raise SchemaMismatchError(f"{path} has {f.dim}-dim vectors, the embedder "
                                          f"{self.dim}")
            out.append(ContextPart(day, *_rows(f)) if f.chunk_count else
                       ContextPart(day, [], np.zeros((0, self.dim), dtype=np.float32)))
        return out

    @staticmethod
    def _day(path: Path) -> str:
        m = ARCHIVE_NAME.match(path.name)
        if m is None:
            raise ValidationError(f"{path}: not an archive file name")
        return m.group(1)

    def stored_schema(self) -> tuple[int, dict[str, Any] | None] | None:
        """The vector width and embedding profile the store's files were written with
        (None: it has no files yet)."""
        for path in [self.active_path, *self._archive_paths()]:
            if path.exists():
                f = LayerFile.open(path)
                if f.dim:
                    return f.dim, f.embedding_profile
        return None

    def is_empty(self) -> bool:
        return not self.active_path.exists() and not self._archive_paths()

    def replace(self, parts: Sequence[ContextPart]) -> None:
        """Make the store exactly ``parts`` (``sediment pull --context``): each archive
        and then the active file written whole and put in place atomically, archives no
        part names removed last, all under the store's lock. The chunks get fresh ids of
        the store's range, above any it used (a server numbers its rows from its one
        sequence, in the project's range: kept, they could be ids the pulled project's
        writers give next), their references following; the files' ``id_high_water`` is
        the largest, so later appends continue past them."""
        md: dict[str, Any] = {"v": 1, "tool_name": "sediment"}
        if self.profile is not None:
            md["embedding_profile"] = dict(self.profile)
            md["cache_key_alg"] = CACHE_KEY_ALG
            if self.embedder_metadata:
                md["embedder_metadata"] = dict(self.embedder_metadata)
        self.directory.mkdir(parents=True, exist_ok=True)
        with self.layers.transaction():
            groups, fresh = renumbered_into(
                [p.chunks for p in parts], self.layers.ids,
                self.layers.written_high_water(self._archive_high_waters()))
            parts = [replace(p, chunks=g) for p, g in zip(parts, groups, strict=True)]
            top = fresh.stop - 1 if fresh.stop > self.layers.ids.first else 0
            etype = new_element_type(self.profile)
            keep = set()
            for p in sorted(parts, key=lambda x: (x.day is None, x.day or "")):
                path = self.active_path if p.day is None else self._archive_path(p.day)
                if p.day is not None and ARCHIVE_NAME.match(path.name) is None:
                    raise ValidationError(f"archive day {p.day!r} is not YYYY-MM-DD")
                self._rewrite(path, list(p.chunks), np.asarray(p.vectors, dtype=np.float32),
                              top, md, etype)
                keep.add(path)
            if self.active_path not in keep:
                self._rewrite(self.active_path, [], np.zeros((0, self.dim), np.float32), top,
                              md, etype)
            for path in self._archive_paths():
                if path not in keep:
                    path.unlink()
        self._cache = None

    def size_bytes(self) -> int:
        paths = [self.active_path, *self._archive_paths()]
        return sum(p.stat().st_size for p in paths if p.exists())

    def version(self) -> Hashable:
        la = self.layers.layer(LayerName.LOCAL)
        return (la.stamp if la is not None else None,
                tuple((p.name, p.stat().st_mtime_ns) for p in self._archive_paths()))

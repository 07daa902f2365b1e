"""One chunk with its provenance resolved and its history: what ``inspect --id`` shows.

A reviewer deciding whether to trust a chunk needs where it came from (RFC 7.2, 15.5): the
source chunks themselves, the current text of each ``path:line`` it cites, the other
layers' versions of the same id, and every event that refers to it, in time order.

A source id equal to the chunk's own id is the version it was promoted from: an accepted
copy in user names the delta original that way, so it resolves to a lower layer's version.
File sources are read by :class:`SourceLines`: only inside ``root`` (a chunk citing
``/etc/passwd:1`` shows nothing from outside the project), never a dotfile or one of
Sediment's own files, only what the project compiles when the caller gives its globs, and
a bounded number of bytes per file, cached.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sediment.credentials import find_credentials
from sediment.errors import NotFoundError
from sediment.format import Chunk, LayerFile, Source
from sediment.format.ids import parse_source_ref
from sediment.store import PRECEDENCE, LayerName, LayerSet, LayerStore
from sediment.store.events import Event, ProposalState, fold_proposals, iter_events
from sediment.store.layerset import event_chunks, same_file
from sediment.store.rules import Reader, writers

SUBJECT_KEYS = ("context_id", "proposal_id", "promoted_id", "old_id", "new_id")
DEFAULT_DEPTH = 3
MAX_LINE_CHARS = 500


@dataclass(frozen=True, slots=True)
class ResolvedSource:
    """One provenance reference and what it points at now."""

    ref: Source
    type: str  # chunk | file | other
    found: bool
    layer: str | None = None
    chunk: Chunk | None = None
    file: str | None = None
    line: int | None = None
    text: str | None = None
    note: str = ""
    sources: tuple[ResolvedSource, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ref": self.ref, "type": self.type, "found": self.found}
        if self.type == "chunk":
            out.update(layer=self.layer, chunk=self.chunk.to_dict() if self.chunk else None,
                       sources=[s.to_dict() for s in self.sources])
        elif self.type == "file":
            out.update(file=self.file, line=self.line, text=self.text)
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True, slots=True)
class EventRecord:
    """An event that refers to the inspected chunk."""

    layer: str
    id: int
    kind: str
    author: str
    created_at_ms: int
    data: dict[str, Any]

    @property
    def actor(self) -> str | None:
        """Who made the event (a write's or proposal's actor, a decision's reviewer)."""
        who = self.data.get("actor") or self.data.get("reviewer")
        return who if isinstance(who, str) else None

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "id": self.id, "kind": self.kind, "author": self.author,
                "actor": self.actor, "created_at_ms": self.created_at_ms, "data": self.data}


@dataclass(frozen=True, slots=True)
class ChunkReport:
    """``inspect --layer FILE --id N``: the chunk, its provenance and its history."""

    path: str
    layer: str | None
    chunk: Chunk
    versions: tuple[tuple[str, Chunk], ...]
    sources: tuple[ResolvedSource, ...]
    events: tuple[EventRecord, ...]
    proposals: tuple[tuple[int, str], ...] = field(default=())
    actor: str | None = None
    """Who wrote the chunk (its ``meta.write`` event; None when no event records it)."""

    def to_dict(self) -> dict[str, Any]:
        """The chunk's own fields at the top level (as plain ``inspect --id`` prints them),
        then where it lives, its resolved sources and its events."""
        return {**self.chunk.to_dict(), "actor": self.actor, "path": self.path,
                "layer": self.layer,
                "versions": [{"layer": n, "same_content": c.content == self.chunk.content,
                              "author": c.author, "confidence": round(c.confidence, 6)}
                             for n, c in self.versions],
                "provenance": [s.to_dict() for s in self.sources],
                "events": [e.to_dict() for e in self.events],
                "proposals": [{"proposal_id": p, "status": s} for p, s in self.proposals]}


OWN_FILES = ("*.db", "*.db.*", "*.lex", "*.ann", "*.lock", "*.tmp")
"""Names of files Sediment writes (layers, their signatures and derived indexes, locks,
temporaries): never shown as a source, whatever the globs say."""
MAX_SOURCE_BYTES = 1 << 20
"""Bytes of one file read to show its lines: a line past them is not shown."""
CACHED_FILES = 32
CACHED_REFS = 4096


class SourceLines:
    """The lines of ``path:line`` sources a person may see, read once per file version.

    A source is shown only when its file is under ``root`` (symlinks resolved), no part of
    its path starts with a dot (``.env``, ``.git/``, ``.sediment/``: the context store), its
    name is not one of Sediment's own files (:data:`OWN_FILES`: ``AGENTS.local.db`` holds
    other actors' memories), ``selects`` accepts it (the project's compile globs, so a
    proposal shows only what a compile would read), and the line does not look like a
    credential. At most ``max_bytes`` of a file are read; the lines are kept per file,
    keyed by its inode, size and mtime, so a queue citing one large file many times reads
    it once, and each reference's result is kept while that file version lasts (a refusal
    by path for good), so a page shown again costs a stat per source.
    """

    def __init__(self, root: str | os.PathLike[str],
                 selects: Callable[[str], bool] | None = None, *,
                 max_bytes: int = MAX_SOURCE_BYTES) -> None:
        self.root = Path(root).resolve()
        self.selects = selects
        self.max_bytes = max_bytes
        self._files: OrderedDict[tuple[str, int, int, int],
                                 tuple[list[str], bool, dict[int, bool]]] = OrderedDict()
        """(lines, cut at max_bytes, line number -> looks like a credential) per version."""
        self._lock = threading.Lock()
        self._refs: OrderedDict[str, tuple[tuple[str, int, int, int] | None,
                                           ResolvedSource]] = OrderedDict()
        self.reads = 0
        """Files read so far (not served from the cache)."""

    def _refused(self, rel: str, target: Path) -> str | None:
        """Why the file may not be shown, checked on the path as cited and as resolved
        (a symlink must not lead past a rule)."""
        forms = {target.relative_to(self.root).as_posix()}
        cited = posixpath.normpath(rel)
        if not cited.startswith(("/", "../")) and cited != "..":
            forms.add(cited)
        for form in sorted(forms):
            parts = form.split("/")
            if any(p.startswith(".") for p in parts):
                return "a hidden file or directory; not shown"
            if any(fnmatch.fnmatchcase(parts[-1], pat) for pat in OWN_FILES):
                return "one of Sediment's own files; not shown"
            if self.selects is not None and not self.selects(form):
                return "not a file this project compiles (compile include/exclude); not shown"
        return None

    @staticmethod
    def _key(target: Path) -> tuple[str, int, int, int]:
        st = target.stat()
        return (str(target), st.st_ino, st.st_size, st.st_mtime_ns)

    def _lines(self, target: Path) -> tuple[list[str], bool, dict[int, bool]]:
        key = self._key(target)
        with self._lock:
            got = self._files.get(key)
            if got is not None:
                self._files.move_to_end(key)
                return got
        with target.open("rb") as fh:
            data = fh.read(self.max_bytes + 1)
        cut = len(data) > self.max_bytes
        lines = data[:self.max_bytes].decode("utf-8", errors="replace").splitlines()
        if cut and lines:
            lines.pop()  # the last one may be cut short
        with self._lock:
            self.reads += 1
            got = self._files[key] = (lines, cut, {})
            while len(self._files) > CACHED_FILES:
                self._files.popitem(last=False)
        return got

    def read(self, ref: str) -> ResolvedSource:
        """The source ``ref`` for people. A result is remembered per reference: a refusal
        (decided by the path alone) as it is, a line while its file's version is the same."""
        with self._lock:
            hit = self._refs.get(ref)
        if hit is not None:
            key, result = hit
            try:
                if key is None or self._key(Path(key[0])) == key:
                    return result
            except OSError:
                pass
        result, key = self._read(ref)
        if key is not None or (result.note.endswith("not shown")
                               or result.note.endswith("not read")):
            with self._lock:
                self._refs[ref] = (key, result)
                while len(self._refs) > CACHED_REFS:
                    self._refs.popitem(last=False)
        return result

    def _read(self, ref: str) -> tuple[ResolvedSource, tuple[str, int, int, int] | None]:
        """The result and, when it depends on a file's content, that file's version."""
        found = self._resolve(ref)
        if isinstance(found, ResolvedSource):
            return found, None
        target, rel, line = found
        try:
            key = self._key(target)
            lines, cut, secret = self._lines(target)
        except OSError as exc:
            return ResolvedSource(ref, "file", False, file=rel, line=line,
                                  note=f"unreadable: {exc.strerror or exc}"), None
        if line > len(lines):
            note = (f"line {line} is past the first {self.max_bytes} bytes; not shown" if cut
                    else f"line {line} is past the end of the file ({len(lines)} lines)")
            return ResolvedSource(ref, "file", False, file=rel, line=line, note=note), key
        text = lines[line - 1]
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + "…"
        if line not in secret:
            secret[line] = bool(find_credentials(text))
        if secret[line]:
            return ResolvedSource(ref, "file", False, file=rel, line=line,
                                  note="the line looks like it holds a credential; not shown"
                                  ), key
        return ResolvedSource(ref, "file", True, file=rel, line=line, text=text), key

    def _resolve(self, ref: str) -> ResolvedSource | tuple[Path, str, int]:
        """The file a reference may be read from, or why it may not."""
        parsed = parse_source_ref(ref)
        if parsed is None:
            return ResolvedSource(ref, "other", False, note="neither a chunk id nor path:line")
        rel, line = parsed.path, parsed.line
        base = self.root
        target = (base / rel).resolve()
        if not target.is_relative_to(base) or target == base:
            return ResolvedSource(ref, "file", False, file=rel, line=line,
                                  note=f"outside the root {base}; not read")
        refused = self._refused(rel, target)
        if refused is not None:
            return ResolvedSource(ref, "file", False, file=rel, line=line, note=refused)
        if not target.is_file():
            return ResolvedSource(ref, "file", False, file=rel, line=line,
                                  note=f"no such file under {base}")
        return target, rel, line


class _Resolver:
    """``own`` is the inspected file when it is outside the store (else None)."""

    def __init__(self, layerset: LayerStore, own: LayerFile | None,
                 own_layer: LayerName | None, lines: SourceLines,
                 viewer: str | None = None) -> None:
        self.layerset, self.own, self.own_layer, self.lines = layerset, own, own_layer, lines
        self._reader = Reader(layerset, viewer)

    def readable(self, name: LayerName | None, chunk: Chunk) -> bool:
        """Whether the viewer may see this source chunk (``sediment.store.rules``): a queue
        is shared, so another actor's memory or local note cited as a source stays
        unread. A chunk of a file outside the set (``name`` None) was handed over whole."""
        return name is None or self._reader.may_read(name, chunk)

    def chunk(self, ref: int, owner: int, owner_layer: LayerName | None,
              from_own: bool) -> tuple[str | None, Chunk | None, LayerName | None]:
        versions = self.layerset.versions(ref)
        if ref == owner:
            # The chunk's own id: the version it was promoted from, in a lower layer.
            rank = owner_layer.rank if owner_layer is not None else 99
            for name, c in versions:
                if name.rank < rank:
                    return name.value, c, name
            return None, None, None
        if from_own and self.own is not None:
            mine = self.own.get(ref)
            if mine is not None:
                return self.own.path, mine, None
        if versions:
            top, c = versions[0]
            return top.value, c, top
        return None, None, None

    def resolve(self, chunk: Chunk, layer: LayerName | None, depth: int, from_own: bool,
                seen: frozenset[tuple[str | None, int]]) -> tuple[ResolvedSource, ...]:
        out: list[ResolvedSource] = []
        for ref in chunk.sources:
            if isinstance(ref, str):
                out.append(self.lines.read(ref))
                continue
            where, found, name = self.chunk(ref, chunk.id, layer, from_own)
            if found is None or not self.readable(name, found):
                # unreadable reads as absent: the team server cannot tell them apart
                # (another actor's memory is no chunk there), so neither do the files
                note = ("the version it was promoted from is not in any layer you may read"
                        if ref == chunk.id else "not in any layer you may read")
                out.append(ResolvedSource(ref, "chunk", False, note=note))
                continue
            key = (where, found.id)
            nested: tuple[ResolvedSource, ...] = ()
            note = ""
            if key in seen:
                note = "already shown above (cycle)"
            elif depth > 1:
                nested = self.resolve(found, name, depth - 1,
                                      self.own is not None and where == self.own.path,
                                      seen | {key})
            elif found.sources:
                note = "its own sources are not expanded (depth limit)"
            out.append(ResolvedSource(ref, "chunk", True, layer=where, chunk=found,
                                      note=note, sources=nested))
        return tuple(out)


def _refers(data: dict[str, Any], chunk: Chunk, target: int) -> bool:
    if target in [s for s in chunk.sources if isinstance(s, int)]:
        return True
    return any(data.get(k) == target and not isinstance(data.get(k), bool)
               for k in SUBJECT_KEYS)


def inspect_chunk(path: str | os.PathLike[str], chunk_id: int, *,
                  layerset: LayerSet | None = None, root: str | os.PathLike[str] | None = None,
                  depth: int = DEFAULT_DEPTH, lines: SourceLines | None = None,
                  viewer: str | None = None) -> ChunkReport:
    """Inspect chunk ``chunk_id`` of the layer file ``path``.

    ``layerset`` resolves source chunks and events (default: the standard layer files
    beside ``path``); ``path:line`` sources are read by ``lines`` (default: a
    :class:`SourceLines` over ``root``, else the working directory, with no globs).
    The file need not belong to the set (an archive, a compacted base): its own chunks and
    events are then consulted too.
    """
    p = Path(path)
    f = LayerFile.open(p)
    chunk = f.get(chunk_id)
    if chunk is None:
        raise NotFoundError(f"{p}: no chunk with id {chunk_id}")
    ls = layerset if layerset is not None else LayerSet.from_directory(p.parent or Path("."))
    own_layer = next((n for n in PRECEDENCE if (q := ls.paths.get(n)) is not None
                      and q.exists() and same_file(q, p)), None)
    tagged = [(e.layer.value, e) for e in ls.events()]
    if own_layer is None:
        # A file outside the set (an archive): its own events count too. The fold only
        # reads kinds and content, so the layer tag is nominal.
        own = [(LayerName.DELTA, c) for c in event_chunks(f)]
        tagged += [(str(p), e) for e in iter_events(own)]
    tagged.sort(key=lambda t: (t[1].chunk.created_at_ms, t[1].chunk.id))
    folded = fold_proposals((e for _, e in tagged), copied_to_user=ls.copied_to_user)
    return _report(ls, chunk, str(p), own_layer, f if own_layer is None else None,
                   lines or SourceLines(root if root is not None else Path.cwd()), depth,
                   viewer, tagged, folded)


def inspect_stored(store: LayerStore, name: LayerName, chunk_id: int, *,
                   root: str | os.PathLike[str] | None = None,
                   depth: int = DEFAULT_DEPTH, lines: SourceLines | None = None,
                   viewer: str | None, events: Sequence[Event] | None = None,
                   states: Mapping[int, ProposalState] | None = None) -> ChunkReport:
    """:func:`inspect_chunk` for chunk ``chunk_id`` of layer ``name`` of any backend (the
    layer files or the team server): the same report, its ``path`` the layer's location.
    ``viewer`` has no default: None (the machine's owner) reads every cited local note, so
    a page shown to a signed-in actor must name them (the web page's proposal once did not
    and showed a reviewer another actor's local note cited as a source).
    ``events`` and ``states`` are ``store.events()`` and ``store.proposals()`` when the
    caller has them already (the web page reads them once per change, not per view)."""
    chunk = store.chunk(name, chunk_id)
    if chunk is None:
        raise NotFoundError(f"{store.location(name)}: no chunk with id {chunk_id}")
    tagged = sorted(((e.layer.value, e) for e in (store.events() if events is None
                                                   else events)),
                    key=lambda t: (t[1].chunk.created_at_ms, t[1].chunk.id))
    return _report(store, chunk, store.location(name), name, None,
                   lines or SourceLines(root if root is not None else Path.cwd()), depth,
                   viewer, tagged, store.proposals() if states is None else states)


def _report(store: LayerStore, chunk: Chunk, path: str, layer: LayerName | None,
            own: LayerFile | None, lines: SourceLines, depth: int, viewer: str | None,
            tagged: Sequence[tuple[str, Event]], states: Mapping[int, ProposalState]
            ) -> ChunkReport:
    """The report of both inspections, from the events (where each is, in time order)."""
    resolver = _Resolver(store, own, layer, lines, viewer)
    sources = resolver.resolve(chunk, layer, max(depth, 1), True,
                               frozenset({(layer.value if layer else path, chunk.id)}))
    return ChunkReport(
        path, layer.value if layer else None, chunk,
        tuple((n.value, c) for n, c in store.versions(chunk.id)), sources,
        tuple(EventRecord(w, e.chunk.id, e.kind, e.chunk.author, e.chunk.created_at_ms, e.data)
              for w, e in tagged if _refers(e.data, e.chunk, chunk.id)),
        tuple((s.id, s.status) for s in states.values() if s.context_id == chunk.id),
        writers(e for _, e in tagged).get(chunk.id))

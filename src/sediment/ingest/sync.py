"""Sync: recompile only the files that changed since the last compile, with the same bytes.

A compile run through here leaves a state file beside the base (``.AGENTS.db.sync.json``):
the base's sha256, a fingerprint of everything besides the files that decides the chunks
(chunking options, embedding profile, Sediment's version), and for each file its size,
mtime, the sha256 of its text and the ids of its chunks. The next sync takes an unchanged
file's chunks and vectors straight from the previous base instead of reading, chunking and
embedding it again; everything else (discovery, ids, times, annotations, encoding) runs as
in a full compile, so a sync writes exactly the bytes a full compile of the same sources
would (``tests/ingest/test_sync.py``).

A file is unchanged when its text hashes the same. Its size and mtime alone are trusted only
when the mtime is more than ``RACY_NS`` older than the state (git's "racily clean" rule): a
file edited within that window of the last compile is hashed again. The state is derived
data: missing, unreadable, for another base or another fingerprint, the sync is a full
compile. i8 bases are always compiled in full (their vectors are stored quantised).

After the new base is written, chunks of the previous base that it no longer has are looked
up in the other layers: a chunk there with such an id overrode a base chunk that was removed
(its file is gone) or changed (its file is still there), and is reported.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sediment import __version__
from sediment.embed import Embedder
from sediment.errors import SedimentError
from sediment.format import Chunk, LayerFile
from sediment.ingest.compile import (
    CompileOptions,
    CompileReport,
    FileState,
    Piece,
    Progress,
    compile_layer,
)
from sediment.ingest.ids import chunk_key
from sediment.ingest.model import SourceText
from sediment.ingest.sources import read_text_file
from sediment.store.atomic import atomic_write
from sediment.store.ids import COMPILED_MAX

__all__ = ["Override", "SyncReport", "find_overrides", "fingerprint", "state_path", "sync_layer",
           "write_state"]

STATE_VERSION = 1
RACY_NS = 2_000_000_000


def state_path(out: Path) -> Path:
    return out.parent / f".{out.name}.sync.json"


def fingerprint(opts: CompileOptions, embedder: Embedder) -> str:
    """Everything except the files' text that decides a compile's chunks and vectors."""
    facts = {"v": STATE_VERSION, "sediment": __version__, "max_chars": opts.max_chars,
             "kinds": [list(r) for r in opts.kind_rules], "default_kind": opts.default_kind,
             "element_type": opts.element_type, "profile": embedder.profile.to_dict(),
             "embedder": embedder.metadata()}
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def write_state(opts: CompileOptions, embedder: Embedder, report: CompileReport) -> Path:
    """Record what ``report``'s compile saw, so the next sync can skip unchanged files."""
    data = {"v": STATE_VERSION, "base_sha256": report.sha256,
            "fingerprint": fingerprint(opts, embedder), "written_ns": time.time_ns(),
            "files": {p: [s.size, s.mtime_ns, s.digest, list(s.ids)]
                      for p, s in sorted(report.states.items())}}
    path = state_path(opts.out)
    atomic_write(path, json.dumps(data, separators=(",", ":")).encode())
    return path


@dataclass(frozen=True, slots=True)
class Override:
    """A chunk of a higher layer whose base chunk the sync removed or changed."""

    id: int
    layer: str
    path: str
    reason: str
    """``removed`` (its file is gone) or ``changed`` (its file changed)."""
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class SyncReport:
    compile: CompileReport
    full: bool
    """True when the previous state could not be used and every file was read."""
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    overrides: list[Override] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {**self.compile.to_dict(), "full": self.full, "added": self.added,
                "changed": self.changed, "removed": self.removed,
                "overrides": [o.to_dict() for o in self.overrides]}


class _Previous:
    """The previous base and its state: hands back an unchanged file's chunks and vectors."""

    def __init__(self, base: LayerFile, files: dict[str, list[Any]], written_ns: int) -> None:
        self.base = base
        self.files = files
        self.written_ns = written_ns
        self.chunks = base.chunks_at(np.arange(base.chunk_count))
        self.position = {c.id: n for n, c in enumerate(self.chunks)}

    @property
    def previous(self) -> tuple[Sequence[Chunk], Mapping[str, Any] | None]:
        return self.chunks, self.base.metadata

    @classmethod
    def load(cls, opts: CompileOptions, embedder: Embedder) -> _Previous | None:
        out = opts.previous or opts.out
        if opts.element_type != "f32" or not out.exists():
            return None
        try:
            state = json.loads(state_path(out).read_bytes())
            with out.open("rb") as fh:
                digest = hashlib.file_digest(fh, "sha256").hexdigest()
        except (OSError, ValueError):
            return None
        if (not isinstance(state, dict) or state.get("v") != STATE_VERSION
                or state.get("base_sha256") != digest
                or state.get("fingerprint") != fingerprint(opts, embedder)
                or not isinstance(state.get("files"), dict)):
            return None
        try:
            base = LayerFile.open(out)
            if base.element_type != "f32":
                return None
            return cls(base, state["files"], int(state.get("written_ns", 0)))
        except (SedimentError, ValueError, TypeError):
            return None

    def pieces(self, shown: str, path: Path) -> tuple[list[Piece], FileState] | None:
        entry = self.files.get(shown)
        try:
            st = path.stat()
            size, mtime_ns, digest, ids = entry  # type: ignore[misc]
        except (OSError, TypeError, ValueError):
            return None
        trusted = (st.st_size == size and st.st_mtime_ns == mtime_ns
                   and mtime_ns < self.written_ns - RACY_NS)
        if not trusted:
            got = read_text_file(path.parent, path.name)
            if not isinstance(got, SourceText) or \
                    hashlib.sha256(got.text.encode()).hexdigest() != digest:
                return None
        if not all(isinstance(i, int) and i in self.position for i in ids):
            return None
        out = []
        matrix, rows = self.base.embeddings, self.base.rows
        for i in ids:
            pos = self.position[i]
            chunk = self.chunks[pos]
            if not chunk.sources or not isinstance(chunk.sources[0], str):
                return None
            vector = np.array(matrix[rows[pos]], dtype=np.float32)
            out.append(Piece(shown, chunk.content, chunk.kind, chunk.sources[0], None, vector))
        return out, FileState(st.st_size, st.st_mtime_ns, digest)


def _old_chunks(out: Path, previous: _Previous | None,
                ) -> tuple[dict[int, tuple[str, str]], dict[str, str]]:
    """The previous base's compiled chunks (id -> (path, source)) and its state's digests."""
    chunks: dict[int, tuple[str, str]] = {}
    digests: dict[str, str] = {}
    if not out.exists():
        return chunks, digests
    try:
        decoded = previous.chunks if previous is not None else list(LayerFile.open(out).chunks())
    except SedimentError:
        return {}, {}
    for c in decoded:
        if c.id <= COMPILED_MAX and c.sources and isinstance(c.sources[0], str):
            chunks[c.id] = (chunk_key(c.content, c.sources)[0], c.sources[0])
    try:
        files = json.loads(state_path(out).read_bytes()).get("files", {})
        digests = {p: e[2] for p, e in files.items()}
    except (OSError, ValueError, AttributeError, TypeError, IndexError, KeyError):
        pass
    return chunks, digests


def find_overrides(removed: dict[int, tuple[str, str]], still_there: set[str],
                   others: Sequence[tuple[str, Path]]) -> list[Override]:
    """Chunks of the ``others`` layers whose ids are among the ``removed`` base chunks."""
    found = []
    wanted = np.fromiter(removed, dtype=np.uint32, count=len(removed))
    for layer, path in others:
        if not wanted.size or not path.exists():
            continue
        f = LayerFile.open(path)
        for pos in np.flatnonzero(np.isin(f.ids, wanted)).tolist():
            cid = int(f.ids[pos])
            file, source = removed[cid]
            found.append(Override(cid, layer, str(path),
                                  "changed" if file in still_there else "removed", source))
    return sorted(found, key=lambda o: (o.id, o.layer))


def sync_layer(opts: CompileOptions, embedder: Embedder, *,
               others: Sequence[tuple[str, Path]] = (), progress: Progress | None = None,
               full: bool = False) -> SyncReport:
    """Compile ``opts`` reusing what is unchanged, record the state, report what changed.

    ``others`` are the higher layers (name, path) searched for orphaned overrides.
    """
    out = opts.previous or opts.out
    previous = None if full else _Previous.load(opts, embedder)
    old, old_digests = _old_chunks(out, previous)
    report = compile_layer(opts, embedder, progress=progress, reuse=previous)
    write_state(opts, embedder, report)
    new = {p: s.digest for p, s in report.states.items()}
    kept = set(report.ids)
    removed = {i: v for i, v in old.items() if i not in kept}
    return SyncReport(
        compile=report, full=previous is None,
        added=sorted(set(new) - set(old_digests)),
        changed=sorted(p for p in new if p in old_digests and old_digests[p] != new[p]),
        removed=sorted(set(old_digests) - set(new)),
        overrides=find_overrides(removed, set(new), others))

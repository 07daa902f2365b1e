"""Compile source documents into an immutable base layer (RFC 15.1).

Reproducible by construction: files are taken in sorted order; a chunk keeps the id it had
in the previous base when its source path and content are unchanged, and new chunks are
numbered in that order above the previous base's ids, below the range writers use
(``ingest/ids.py``); ``created_at`` comes from the sources (each file's last commit time in
git, else ``SOURCE_DATE_EPOCH``, else 0; never the wall clock), and the layer metadata holds
the embedding profile but no timestamps. The same sources and previous base give the same
bytes, so compiling twice gives the same sha256.
"""

from __future__ import annotations

import hashlib
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from sediment.embed import Embedder
from sediment.embed.profile import CACHE_KEY_ALG
from sediment.errors import ValidationError
from sediment.format import Chunk, Source, encode_layer
from sediment.format.profile import quant_scale
from sediment.ingest.chunker import DEFAULT_MAX_CHARS, chunk_file
from sediment.ingest.connectors import SourceRoot
from sediment.ingest.discover import discover
from sediment.ingest.ids import CompiledIds
from sediment.ingest.kinds import KindRule
from sediment.ingest.model import Skipped, source_ref
from sediment.ingest.sources import read_text_file
from sediment.search.ann import eligible, ensure_index
from sediment.search.lexicon import ensure_lexicon
from sediment.store.atomic import is_regular_target, write_output
from sediment.store.events import is_meta_kind
from sediment.store.ids import ID_RANGES

Progress = Callable[[str, int, int], None]
EMBED_BATCH = 64


class Annotator(Protocol):
    """Adds files and annotation chunks to a compile (KCP manifests implement this).

    ``files`` are compiled besides the globbed ones; ``annotations`` returns extra chunks
    with ids from ``next_id`` (an allocator called with each chunk's content and sources,
    or the first of consecutive ids), given the ids each compiled file's chunks received.
    ``meta.*`` annotations get zero vectors; the others are embedded like any chunk.
    """

    @property
    def files(self) -> list[str]: ...

    @property
    def manifest_paths(self) -> list[str]: ...

    @property
    def warnings(self) -> list[str]: ...

    def annotations(self, chunk_ids: Mapping[str, Sequence[int]],
                    next_id: int | Callable[[str, Sequence[Source]], int], *,
                    created_at_ms: Mapping[str, int] | None = None) -> list[Chunk]: ...


@dataclass(slots=True)
class CompileOptions:
    root: Path
    include: Sequence[str]
    out: Path
    exclude: Sequence[str] = ()
    max_chars: int = DEFAULT_MAX_CHARS
    kind_rules: Sequence[tuple[str, str]] = ()
    default_kind: str = "canonical"
    element_type: str = "f32"
    annotator: Annotator | None = None
    build_index: bool = True
    """Build the approximate-search index when the layer reaches ANN_MIN_ROWS chunks."""
    previous: Path | None = None
    """The previous base whose ids unchanged chunks keep (default: ``out`` if it exists)."""
    allow_empty: bool = True
    """False: a compile that finds no text in the sources raises instead of writing an
    empty layer (a glob typo should not go unnoticed)."""
    sources: Sequence[SourceRoot] = ()
    """Configured sources; when empty, ``root`` with ``include`` and ``exclude`` is the one."""
    source_date_epoch: int = 0
    """The time (seconds) of a file git does not date: the reproducible-builds
    ``SOURCE_DATE_EPOCH``, handed down from the configuration."""


@dataclass(slots=True)
class CompileReport:
    out: Path
    files: int
    chunks: int
    bytes: int
    sha256: str
    embedded: int
    cached: int
    seconds: float
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    index: Path | None = None
    reused: int = 0
    """Chunks taken with their vectors from the previous base (sync), not re-read."""
    states: dict[str, FileState] = field(default_factory=dict)
    ids: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "out": str(self.out), "files": self.files, "chunks": self.chunks,
            "bytes": self.bytes, "sha256": self.sha256, "embedded": self.embedded,
            "cached": self.cached, "seconds": round(self.seconds, 3),
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "warnings": list(self.warnings),
            "index": str(self.index) if self.index else None,
            "reused": self.reused,
        }


def source_times(root: Path, paths: Sequence[str], fallback_s: int = 0) -> dict[str, int]:
    """Last commit time (ms) of each path in git, else ``fallback_s`` (SOURCE_DATE_EPOCH).

    One ``git log`` over the whole history gives every file's newest commit: the first
    time a path appears in the log (newest first) is its last change.
    """
    out = dict.fromkeys(paths, fallback_s * 1000)
    try:
        prefix = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--show-prefix"], capture_output=True,
            text=True, timeout=30, check=True).stdout.strip()
        log = subprocess.run(
            ["git", "-C", str(root), "-c", "core.quotepath=off", "log", "--format=@%ct",
             "--name-only", "--no-renames", "--", "."],
            capture_output=True, text=True, timeout=120, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return out
    wanted = {prefix + p: p for p in paths}
    seen: set[str] = set()
    current = 0
    for line in log.splitlines():
        if line.startswith("@"):
            current = int(line[1:] or 0)
        elif line and line in wanted and line not in seen:
            seen.add(line)
            out[wanted[line]] = current * 1000
    return out


@dataclass(slots=True)
class Piece:
    """One chunk-to-be: its text, provenance, and either what to embed or its vector."""

    path: str
    content: str
    kind: str
    source: str
    text: str | None
    vector: npt.NDArray[np.float32] | None = None


@dataclass(frozen=True, slots=True)
class FileState:
    """What a compile saw of one file: enough for a sync to know it is unchanged."""

    size: int
    mtime_ns: int
    digest: str
    ids: tuple[int, ...] = ()


class Reuse(Protocol):
    """Gives the pieces of a file unchanged since the last compile (``sediment.ingest.sync``)."""

    def pieces(self, shown: str, path: Path) -> tuple[list[Piece], FileState] | None: ...

    @property
    def previous(self) -> tuple[Sequence[Chunk], Mapping[str, Any] | None]:
        """The previous base's chunks (decoded once) and metadata, for ``CompiledIds``."""
        ...


def _sources(opts: CompileOptions) -> list[SourceRoot]:
    return list(opts.sources) or [SourceRoot(opts.root, opts.include, opts.exclude)]


def _read_sources(opts: CompileOptions, reuse: Reuse | None, progress: Progress | None,
                  skipped: list[Skipped], warnings: list[str],
                  ) -> tuple[list[Piece], dict[str, FileState], dict[str, int]]:
    rules = [KindRule(g, k) for g, k in opts.kind_rules]
    pieces: list[Piece] = []
    states: dict[str, FileState] = {}
    times: dict[str, int] = {}
    plan: list[tuple[SourceRoot, list[PurePosixPath]]] = []
    for src in _sources(opts):
        rels = discover(src.root, src.include, src.exclude,
                        on_skip=_skip_into(skipped, src))
        if opts.annotator is not None and not src.prefix:
            rels = sorted({*rels, *(PurePosixPath(f) for f in opts.annotator.files)},
                          key=lambda p: p.as_posix())
        plan.append((src, rels))
    total = sum(len(r) for _, r in plan)
    n = 0
    for src, rels in plan:
        first = len(pieces)
        for rel in rels:
            n += 1
            shown = src.shown(rel.as_posix())
            got_back = reuse.pieces(shown, src.root / rel) if reuse is not None else None
            if got_back is not None:
                pieces.extend(got_back[0])
                states[shown] = got_back[1]
            else:
                _read_one(src, rel, shown, opts, rules, pieces, states, skipped, warnings)
            if progress:
                progress("reading", n, total)
        extra = list(opts.annotator.manifest_paths) \
            if opts.annotator is not None and not src.prefix else []
        rel_of = {p.path: p.path[len(src.shown("")):] for p in pieces[first:]}
        rel_of.update({m: m for m in extra})
        got_times = source_times(src.root, sorted(set(rel_of.values())),
                                 opts.source_date_epoch)
        for shown_path, rel_path in rel_of.items():
            times.setdefault(shown_path, got_times.get(rel_path, 0))
    return pieces, states, times


def _skip_into(skipped: list[Skipped], src: SourceRoot) -> Callable[[Skipped], None]:
    return lambda s: skipped.append(Skipped(src.shown(s.path), s.reason))


def _read_one(src: SourceRoot, rel: PurePosixPath, shown: str, opts: CompileOptions,
              rules: Sequence[KindRule], pieces: list[Piece], states: dict[str, FileState],
              skipped: list[Skipped], warnings: list[str]) -> None:
    path = src.root / rel
    try:
        st = path.stat()
    except OSError:
        st = None
    got = read_text_file(src.root, rel)
    if isinstance(got, Skipped):
        skipped.append(Skipped(shown, got.reason))
        return
    doc_chunks, warns = chunk_file(shown, got.text, max_chars=opts.max_chars,
                                   rules=rules, default_kind=opts.default_kind)
    warnings.extend(warns)
    pieces.extend(Piece(shown, c.content, c.kind, source_ref(c), c.text_for_embedding())
                  for c in doc_chunks)
    if st is not None:
        digest = hashlib.sha256(got.text.encode()).hexdigest()
        states[shown] = FileState(st.st_size, st.st_mtime_ns, digest)


def compile_layer(opts: CompileOptions, embedder: Embedder, *,
                  progress: Progress | None = None, reuse: Reuse | None = None,
                  ) -> CompileReport:
    t0 = time.perf_counter()
    skipped: list[Skipped] = []
    annotator = opts.annotator
    warnings: list[str] = list(annotator.warnings) if annotator is not None else []
    pieces, states, times = _read_sources(opts, reuse, progress, skipped, warnings)
    if not pieces and not opts.allow_empty:
        where = "; ".join(
            f"{s.root} (include {', '.join(s.include) or '-'}"
            + (f"; exclude {', '.join(s.exclude)}" if s.exclude else "") + ")"
            for s in _sources(opts))
        raise ValidationError(
            f"no file matched (or none had text) under {where}; nothing was written to "
            f"{opts.out}. "
            "Pass --allow-empty to write an empty layer")
    previous = opts.previous or (opts.out if str(opts.out) != "-"
                                 and is_regular_target(opts.out) else None)
    ids = CompiledIds(previous,
                      known=reuse.previous if reuse is not None else None)
    chunks = []
    for p in pieces:
        sources = (p.source,)
        chunks.append(Chunk(id=ids.allocate(p.content, sources), kind=p.kind,
                            content=p.content, author="human", confidence=1.0,
                            created_at_ms=times.get(p.path, 0), sources=sources))
    file_ids: dict[str, list[int]] = {}
    for chunk, p in zip(chunks, pieces, strict=True):
        file_ids.setdefault(p.path, []).append(chunk.id)
    for path, st in states.items():
        states[path] = FileState(st.size, st.mtime_ns, st.digest, tuple(file_ids.get(path, ())))
    texts: list[str | None] = [p.text for p in pieces]
    given = {i: p.vector for i, p in enumerate(pieces) if p.vector is not None}
    if annotator is not None:
        extra = annotator.annotations(file_ids, ids.allocate, created_at_ms=times)
        chunks.extend(extra)
        texts.extend("" if is_meta_kind(c.kind) else c.content for c in extra)
    before_calls = getattr(embedder, "calls", None)
    vectors = np.zeros((len(texts), embedder.profile.dim), dtype=np.float32)
    for i, vec in given.items():
        vectors[i] = vec
    wanted = [i for i, c in enumerate(chunks) if not is_meta_kind(c.kind) and i not in given]
    for start in range(0, len(wanted), EMBED_BATCH):
        rows = wanted[start:start + EMBED_BATCH]
        vectors[rows] = embedder.embed([texts[i] or "" for i in rows])
        if progress:
            progress("embedding", start + len(rows), len(wanted))
    embedded = len(wanted)
    if before_calls is not None:
        embedded = int(getattr(embedder, "calls", 0)) - int(before_calls)
    profile = embedder.profile.to_dict()
    metadata: dict[str, Any] = {
        "v": 1,
        "embedding_profile": profile,
        "cache_key_alg": CACHE_KEY_ALG,
        "embedder_metadata": embedder.metadata(),
        "id_high_water": ids.high_water,
        "id_ranges": ID_RANGES,
        "tool_name": "sediment",
    }
    if opts.sources:
        metadata["sources"] = [dict(s.record) for s in opts.sources if s.record is not None]
    data = encode_layer(chunks, vectors, dim=embedder.profile.dim,
                        element_type=opts.element_type,
                        quant_scale=quant_scale(opts.element_type, profile), metadata=metadata)
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    write_output(opts.out, data)
    if str(opts.out) != "-" and is_regular_target(opts.out):
        ensure_lexicon(opts.out)
    index = None
    if opts.build_index and eligible(len(chunks)) and str(opts.out) != "-" \
            and is_regular_target(opts.out):
        index = ensure_index(opts.out, progress=(lambda d, t: progress("indexing", d, t))
                             if progress else None)
    return CompileReport(
        out=opts.out, files=len({p.path for p in pieces}), chunks=len(chunks), bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(), embedded=embedded,
        cached=len(wanted) - embedded, seconds=time.perf_counter() - t0, skipped=skipped,
        warnings=warnings, index=index, reused=len(given), states=states,
        ids=[c.id for c in chunks])

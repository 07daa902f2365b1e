"""A set of up to four layers read together, and the one way to append to them.

Reads are snapshots: each layer is a memory map, re-opened only when its file changed on
disk (checked with one ``stat`` per layer), so a long-running server sees other writers'
commits. Appends are commits: under an exclusive lock over every writable layer of the set,
the target layer is re-read, new chunks get ids no layer uses (nor ever used: each layer
records its ``id_high_water`` in metadata), and the whole file is rebuilt beside the old one
and renamed over it (copy-on-write; ``atomic_write``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from filelock import FileLock, Timeout

from sediment.errors import (
    LockTimeoutError,
    NotFoundError,
    PermissionDeniedError,
    SchemaMismatchError,
    SedimentError,
    ValidationError,
)
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.format.profile import CACHE_KEY_ALG, check_compatible, quant_scale
from sediment.format.writer import write_append
from sediment.store.atomic import atomic_fill, atomic_write, remove_stale_temporaries
from sediment.store.backend import LayerSummary
from sediment.store.commit import NewChunk, materialise
from sediment.store.derived import derived
from sediment.store.events import (
    Event,
    ProposalState,
    fold_proposals,
    is_meta_kind,
    iter_events,
    kind_mask,
)
from sediment.store.ids import PROJECT_IDS, WrittenRange, file_high_water, recorded_high_water
from sediment.store.layers import AGENT_WRITABLE, FILE_NAMES, PRECEDENCE, LayerName
from sediment.store.rules import HiddenSets

LOCK_FILE = ".sediment.lock"
"""The one lock file of each directory that holds writable layers (``sediment init``'s
.gitignore block covers it)."""


@dataclass(slots=True)
class OpenLayer:
    name: LayerName
    path: Path
    file: LayerFile
    stamp: tuple[int, int, int] = (0, 0, 0)

    @property
    def profile(self) -> dict[str, Any] | None:
        return self.file.embedding_profile


@dataclass(frozen=True, slots=True)
class Schema:
    """What layers searched together must share (RFC 8.3)."""

    dim: int
    element_type: str
    profile: dict[str, Any] | None = field(default=None)
    source: str = ""


_NEAR_BLOCK = 65_536


def unit_rows(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row scaled to unit length (a zero row stays zero), for cosine similarity."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: npt.NDArray[np.float32] = np.divide(rows, norms, out=np.zeros_like(rows),
                                             where=norms > 0)
    return out


def event_chunks(f: LayerFile) -> list[Chunk]:
    """The ``meta.*`` chunks of a file, found through its distinct kind ids, once per file."""
    return derived(f, "store.event_chunks", _find_event_chunks)


def _find_event_chunks(f: LayerFile) -> list[Chunk]:
    rows = np.flatnonzero(kind_mask(f, is_meta_kind)).tolist()
    return [f.chunk_at(int(i)) for i in rows]


def vectorless_events(chunks: Sequence[Chunk], vectors: npt.NDArray[Any]
                      ) -> list[bool] | None:
    """Which new chunks are events with a zero vector: they share one zero row of the file
    instead of a row each (no search ranks ``meta.*`` chunks by vector), which keeps a store
    that logs an event per write about half the size; compaction keeps that sharing.
    None when there are none."""
    flags = [is_meta_kind(c.kind) for c in chunks]
    if not any(flags):
        return None
    zero = set(np.flatnonzero(~np.asarray(vectors).any(axis=1)).tolist())
    out = [f and i in zero for i, f in enumerate(flags)]
    return out if any(out) else None


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """The layer file's identity, None when it is absent; a directory that is a file
    (``SEDIMENT_DIR``, ``store.dir`` or ``--dir`` naming one) is the user's error, named."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError as exc:
        raise NotFoundError(f"{_not_a_directory(path)} is a file, not a directory: it cannot "
                            f"hold {path}") from exc
    except OSError as exc:
        raise SedimentError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _not_a_directory(path: Path) -> Path:
    """The first of ``path``'s directories that is a file."""
    return next((p for p in reversed(path.parents) if p.exists() and not p.is_dir()),
                path.parent)


def same_file(a: Path, b: Path) -> bool:
    """The same file by device and inode when both exist, else by resolved path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


class LayerSet:
    """Up to four layers by name; any may be absent."""

    def __init__(self, paths: Mapping[LayerName, str | os.PathLike[str] | None]
                 | Mapping[str, str | os.PathLike[str] | None]
                 | Mapping[LayerName | str, str | os.PathLike[str] | None],
                 *, lock_timeout: float = 30.0, ids: WrittenRange = PROJECT_IDS) -> None:
        self.paths: dict[LayerName, Path] = {}
        self.ids = ids
        """The range this set's appends number new chunks from (``store/ids.py``): a
        project's layers by default; an actor's own store and a context store have theirs."""
        for key, value in paths.items():
            if value is not None:
                self.paths[LayerName.parse(str(key))] = Path(value)
        self.lock_timeout = lock_timeout
        self._open: dict[LayerName, OpenLayer] = {}
        self._held = threading.local()
        self._hidden = HiddenSets()

    @classmethod
    def from_directory(cls, directory: str | os.PathLike[str], **kw: Any) -> LayerSet:
        d = Path(directory)
        if not d.is_dir():
            raise NotFoundError(f"{d}: not a directory")
        return cls({name: d / name.file_name for name in LayerName}, **kw)

    # -- reading -------------------------------------------------------------------------
    def _refresh(self, name: LayerName) -> OpenLayer | None:
        path = self.paths.get(name)
        if path is None:
            return None
        stamp = _stamp(path)
        current = self._open.get(name)
        if stamp is None:
            self._open.pop(name, None)
            return None
        if current is not None and current.stamp == stamp:
            return current
        layer = OpenLayer(name, path, LayerFile.open(path), stamp)
        self._open[name] = layer
        return layer

    def layer(self, name: LayerName) -> OpenLayer | None:
        return self._refresh(name)

    def layers(self, names: Iterable[LayerName] | None = None) -> list[OpenLayer]:
        """Present layers, highest precedence first, re-opened if changed on disk."""
        wanted = set(PRECEDENCE if names is None else names)
        out = []
        for name in PRECEDENCE:
            if name in wanted:
                layer = self._refresh(name)
                if layer is not None:
                    out.append(layer)
        return out

    def schema(self, names: Iterable[LayerName] | None = None) -> Schema | None:
        """The shared schema of the present layers; a mismatch names both layers."""
        found: Schema | None = None
        profile_from: OpenLayer | None = None
        for layer in self.layers(names):
            f = layer.file
            if f.chunk_count == 0 and f.dim == 0:
                continue
            if found is None:
                found = Schema(f.dim, f.element_type, None, layer.name.value)
            elif (f.dim, f.element_type) != (found.dim, found.element_type):
                raise SchemaMismatchError(
                    f"layers {found.source} ({found.dim} dims, {found.element_type}) and "
                    f"{layer.name.value} ({f.dim} dims, {f.element_type}) do not share a "
                    f"schema and cannot be used together (RFC 8.3)")
            prof = layer.profile
            if prof is not None:
                if profile_from is None:
                    profile_from = layer
                else:
                    check_compatible(profile_from.profile, prof,
                                     a_name=f"layer {profile_from.name.value}",
                                     b_name=f"layer {layer.name.value}",
                                     consequence="they cannot be searched together (RFC 8.3)")
        if found is not None and profile_from is not None:
            found = Schema(found.dim, found.element_type, profile_from.profile, found.source)
        return found

    def present(self, names: Iterable[LayerName] | None = None) -> list[LayerName]:
        return [layer.name for layer in self.layers(names)]

    def summary(self, name: LayerName, *, max_ids: int = 1000) -> LayerSummary | None:
        layer = self.layer(name)
        if layer is None:
            return None
        f = layer.file
        return LayerSummary(name, str(layer.path), f.chunk_count, f.dim, f.element_type,
                            f.embedding_profile, tuple(f.ids[:max_ids].tolist()))

    def layer_files(self) -> LayerSet:
        return self

    def close(self) -> None:
        pass

    def location(self, name: LayerName) -> str:
        path = self.paths.get(name)
        return str(path) if path is not None else f"no path for the {name.value} layer"

    def chunk(self, name: LayerName, chunk_id: int) -> Chunk | None:
        layer = self.layer(name)
        return layer.file.get(chunk_id) if layer is not None else None

    def vector(self, name: LayerName, chunk_id: int) -> npt.NDArray[np.float32]:
        layer = self.layer(name)
        if layer is None or chunk_id not in layer.file.id_index:
            raise NotFoundError(f"no chunk {chunk_id} in the {name.value} layer")
        return layer.file.vector(layer.file.id_index[chunk_id])

    def chunks(self, name: LayerName) -> Iterator[tuple[Chunk, npt.NDArray[np.float32]]]:
        layer = self.layer(name)
        if layer is None:
            return
        f = layer.file
        for i in range(f.chunk_count):
            yield f.chunk_at(i), f.vector(i)

    def kind_counts(self, name: LayerName) -> dict[str, int]:
        layer = self.layer(name)
        if layer is None or not layer.file.chunk_count:
            return {}
        f = layer.file
        sids, counts = np.unique(f.records["kind"], return_counts=True)
        return {f.string(int(i)): int(c)
                for i, c in zip(sids.tolist(), counts.tolist(), strict=True)}

    def nearest(self, name: LayerName, queries: npt.NDArray[np.float32],
                exclude: Sequence[int], threshold: float, limit: int
                ) -> list[list[tuple[float, Chunk]]]:
        found: list[list[tuple[float, int, int]]] = [[] for _ in range(len(queries))]
        layer = self.layer(name)
        f = layer.file if layer is not None else None
        if f is None or not f.chunk_count or not len(queries) or f.dim != queries.shape[1]:
            return [[] for _ in range(len(queries))]
        q = unit_rows(np.asarray(queries, dtype=np.float32))
        positions = np.flatnonzero(~kind_mask(f, is_meta_kind)).astype(np.int64)
        for start in range(0, len(positions), _NEAR_BLOCK):
            pos = positions[start:start + _NEAR_BLOCK]
            rows = np.asarray(f.embeddings[f.rows[pos]], dtype=np.float32)
            if f.element_type == "i8":
                rows = rows * np.float32(f.quant_scale)
            sims = q @ unit_rows(rows).T
            for i, j in zip(*np.nonzero(sims >= threshold), strict=True):
                cid = int(f.ids[pos[j]])
                if cid != exclude[i]:
                    found[i].append((float(sims[i, j]), cid, int(pos[j])))
        out = []
        for hits in found:
            hits.sort(key=lambda h: (-h[0], h[1]))
            out.append([(sim, f.chunk_at(p)) for sim, _, p in hits[:limit]])
        return out

    def versions(self, chunk_id: int) -> list[tuple[LayerName, Chunk]]:
        """Every layer's version of ``chunk_id``, highest precedence first."""
        out = []
        for layer in self.layers():
            c = layer.file.get(chunk_id)
            if c is not None:
                out.append((layer.name, c))
        return out

    def get(self, chunk_id: int) -> tuple[LayerName, Chunk] | None:
        v = self.versions(chunk_id)
        return v[0] if v else None

    def events(self, names: Iterable[LayerName] | None = None) -> list[Event]:
        """Every ``meta.*`` event of the present layers, in time order."""
        found: list[tuple[LayerName, Chunk]] = []
        for layer in self.layers(names):
            if layer.file.chunk_count:
                found.extend((layer.name, c) for c in event_chunks(layer.file))
        return list(iter_events(found))

    def proposals(self) -> dict[int, ProposalState]:
        """Every proposal's state (``fold_proposals``), an accept whose decision commit is
        missing counted as accepted by the copy it left in user."""
        return fold_proposals(self.events(), copied_to_user=self.copied_to_user)

    def copied_to_user(self, context_id: int) -> bool:
        """Whether user holds the accepted copy of a delta (or local) chunk: same id and
        content, which is what an accept's first commit writes."""
        user = self.layer(LayerName.USER)
        copy = user.file.get(context_id) if user is not None else None
        if copy is None:
            return False
        for name in (LayerName.DELTA, LayerName.LOCAL):
            layer = self.layer(name)
            proposed = layer.file.get(context_id) if layer is not None else None
            if proposed is not None:
                return proposed.content == copy.content
        return False

    def hidden(self, layers: Sequence[OpenLayer], actor: str | None = None) -> frozenset[int]:
        """Ids a search of ``layers`` by ``actor`` leaves out: superseded, forgotten, and
        local chunks other actors wrote (:mod:`sediment.store.rules`), each layer's events
        folded once per version of its file (``HiddenSets``)."""
        return self._folded(layers).answer([layer.name for layer in layers], actor)

    def hidden_ids(self, actor: str | None = None) -> frozenset[int]:
        return self.hidden(self.layers(), actor)

    def private_ids(self, actor: str | None) -> frozenset[int]:
        if actor is None:
            return frozenset()
        layers = self.layers()  # every layer: a proposal in delta shares a local note
        return self._folded(layers).private([layer.name for layer in layers], actor)

    def _folded(self, layers: Sequence[OpenLayer]) -> HiddenSets:
        for layer in layers:
            if self._hidden.version(layer.name) != layer.stamp:
                self._hidden.fold(layer.name, layer.stamp, event_chunks(layer.file)
                                  if layer.file.chunk_count else ())
        return self._hidden

    def high_water(self) -> int:
        """The largest id any layer uses or ever used."""
        return max((file_high_water(layer.file) for layer in self.layers()), default=0)

    def written_high_water(self, extra: Iterable[int] = ()) -> int:
        """The largest id of this set's range (``self.ids``) that any layer uses or ever
        used (and of ``extra``, high-water marks of files outside the set)."""
        r = self.ids
        tops = list(extra)
        for layer in self.layers():
            f = layer.file
            if f.chunk_count:
                ids = f.ids
                top = int(ids.max())
                if top > r.last:  # a later range's ids here too: only then filter them out
                    inside = ids[(ids >= r.first) & (ids <= r.last)]
                    top = int(inside.max()) if inside.size else r.first - 1
                tops.append(top)
            tops.append(recorded_high_water(f.metadata))
        return r.high_water(tops)

    # -- writing -------------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Hold every writable layer's lock for a read-check-write sequence.

        Appends inside run without re-locking, so a decision that reads the proposals'
        state and then writes to user and delta cannot interleave with another writer.
        Nests; other threads and processes wait. Once the locks are held, temporaries left
        by writers that were killed before their rename are removed.
        """
        depth = getattr(self._held, "depth", 0)
        if depth:
            self._held.depth = depth + 1
            try:
                yield
            finally:
                self._held.depth -= 1
            return
        with ExitStack() as stack:
            for lock_path in self._lock_paths():
                lock = FileLock(str(lock_path), timeout=self.lock_timeout)
                try:
                    stack.enter_context(lock)
                except Timeout as exc:
                    raise LockTimeoutError(
                        f"{lock_path}: another writer held the lock for more than "
                        f"{self.lock_timeout:g}s") from exc
                except NotADirectoryError as exc:
                    raise NotFoundError(f"{_not_a_directory(lock_path)} is a file, not a "
                                        f"directory: it cannot hold {lock_path}") from exc
                except OSError as exc:
                    raise SedimentError(f"{lock_path}: cannot take the writers' lock: "
                                        f"{exc.strerror or exc}") from exc
            for name in (LayerName.USER, LayerName.DELTA, LayerName.LOCAL):
                if name in self.paths:
                    remove_stale_temporaries(self.paths[name])
            self._held.depth = 1
            try:
                yield
            finally:
                self._held.depth = 0

    def _lock_paths(self) -> list[Path]:
        """One lock per directory holding a writable layer, taken in sorted order: any two
        sets that share a writable file share its directory's lock, so they exclude each
        other, and sorted order keeps two sets over several directories from deadlocking.
        Directories are resolved, so one named two ways (relative and absolute) is one lock."""
        dirs = {Path(os.path.realpath(self.paths[n].parent))
                for n in (LayerName.USER, LayerName.DELTA, LayerName.LOCAL) if n in self.paths}
        return sorted(d / LOCK_FILE for d in dirs)

    def append(
        self,
        name: LayerName,
        items: Sequence[NewChunk],
        vectors: npt.NDArray[np.float32],
        *,
        profile: Mapping[str, Any] | None,
        embedder_metadata: Mapping[str, Any] | None = None,
        allowed: Sequence[LayerName] = AGENT_WRITABLE,
        element_type: str = "f32",
    ) -> list[int]:
        """Append ``items`` (with one vector each) to layer ``name`` as one commit.

        Returns the ids given to the new chunks. ``allowed`` names the layers this caller
        may write: the agent path passes local and delta only; base is never writable.
        """
        if name is LayerName.BASE:
            raise PermissionDeniedError(
                "the base layer AGENTS.db is immutable (RFC 6.1): write to local or delta, "
                "or recompile the base")
        if name not in allowed:
            names = ", ".join(n.value for n in allowed)
            raise PermissionDeniedError(
                f"writes to the {name.value} layer are not allowed here (allowed: {names})")
        path = self.paths.get(name)
        if path is None:
            raise NotFoundError(f"no path configured for the {name.value} layer")
        self._refuse_base(name, path)
        vecs = np.asarray(vectors, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != len(items):
            raise ValidationError(f"need one vector per chunk: {len(items)} chunks, vectors of "
                                  f"shape {vecs.shape}")
        if not items:
            return []
        with self.transaction():
            return self._append_locked(name, path, items, vecs, profile, embedder_metadata,
                                       element_type)

    def _refuse_base(self, name: LayerName, path: Path) -> None:
        """No role may write the base file: not by its name, not through another path to it."""
        base = self.paths.get(LayerName.BASE)
        if path.name == FILE_NAMES[LayerName.BASE] or (base is not None and same_file(path, base)):
            raise PermissionDeniedError(
                f"{path} is the base layer (AGENTS.db), which is immutable (RFC 6.1); give the "
                f"{name.value} layer its own file, e.g. {FILE_NAMES[name]}")

    def _append_locked(
        self, name: LayerName, path: Path, items: Sequence[NewChunk],
        vecs: npt.NDArray[np.float32], profile: Mapping[str, Any] | None,
        embedder_metadata: Mapping[str, Any] | None, element_type: str,
    ) -> list[int]:
        schema = self.schema()
        dim = int(vecs.shape[1])
        if schema is not None and schema.dim != dim:
            raise SchemaMismatchError(f"new vectors have {dim} dims but the layer set has "
                                      f"{schema.dim} (layer {schema.source})")
        if schema is not None:
            check_compatible(profile, schema.profile, a_name="the active embedder",
                             b_name=f"the layers (from {schema.source})",
                             consequence="new vectors must come from the embedder that made "
                                         "the layers' vectors")
        target = self.layer(name)
        explicit = np.asarray([i.id for i in items if i.id is not None], dtype=np.int64)
        existing_ids = set(np.intersect1d(explicit, target.file.ids.astype(np.int64)).tolist()
                           ) if target and len(explicit) else set()
        fresh = self.ids.next_ids(self.written_high_water(),
                                  sum(1 for i in items if i.id is None))
        next_id = fresh.stop
        new = materialise(items, name.value, iter(fresh), existing_ids,
                          int(time.time() * 1000))
        metadata: dict[str, Any] = dict(target.file.metadata or {}) if target else {}
        metadata.setdefault("v", 1)
        if profile is not None and "embedding_profile" not in metadata:
            metadata["embedding_profile"] = dict(profile)
            metadata["cache_key_alg"] = CACHE_KEY_ALG
            if embedder_metadata:
                metadata["embedder_metadata"] = dict(embedder_metadata)
        metadata["id_high_water"] = max(next_id - 1, max(c.id for c in new),
                                        int(metadata.get("id_high_water") or 0))
        metadata.setdefault("tool_name", "sediment")
        path.parent.mkdir(parents=True, exist_ok=True)
        vectorless = vectorless_events(new, vecs)
        if target is not None and (target.file.chunk_count or target.file.dim == dim):
            old = target.file
            atomic_fill(path, lambda fd: write_append(fd, old, new, vecs, metadata=metadata,
                                                      vectorless=vectorless))
        else:
            etype = schema.element_type if schema is not None else element_type
            data = encode_layer(new, vecs, dim=dim, element_type=etype,
                                quant_scale=quant_scale(etype, profile), metadata=metadata,
                                vectorless=vectorless)
            atomic_write(path, data)
        self._refresh(name)
        return [c.id for c in new]

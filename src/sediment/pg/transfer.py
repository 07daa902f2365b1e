"""Moving layers between files and a server: ``push`` (files -> project), ``pull``.

A push keeps everything a layer file holds: ids, kinds, contents, authors, confidences,
times, sources, vectors (i8 layers keep their scale), and the file's metadata (embedding
profile, id ranges, ``id_high_water``); the id sequence then moves past the largest id, so
the server never gives out an id the files used. Into a project that already has chunks,
a push may only add: a chunk whose id the project's layer already holds is skipped when
identical and refused when different, and an id the files wrote at run time that the
project uses for other content in another layer is refused too, and so is an id the
project's memory or context rows use. The base is never merged: the same base pushed
again adds nothing, a different one replaces the project's only when the caller says so
(``replace_base``), which the adapters allow to reviewers only.

A pull writes each of the project's layers as an RFC layer file, refusing to overwrite a
file that exists unless told to; the files are built beside their targets and put in
place together (:mod:`sediment.pg.staging`), so a failed pull changes nothing.

Memories travel too, as rows of their own table on the server
(:mod:`sediment.pg.memory_transfer`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sediment.errors import NotFoundError, PermissionDeniedError, SchemaMismatchError
from sediment.format import Chunk
from sediment.format.profile import check_compatible, unit_vectors
from sediment.pg.memory_transfer import (
    MemoryRow,
    is_memory_row,
    memory_ids,
    memory_row,
    project_rows,
    pull_actor,
    push_actor,
    push_project,
)
from sediment.pg.search import ensure_vector_index
from sediment.pg.staging import Staging
from sediment.pg.store import PgStore
from sediment.pg.transfer_rows import Pair, new_ids, new_metadata, refuse_existing, stage
from sediment.store import PRECEDENCE, LayerName, LayerSet
from sediment.store.ids import recorded_high_water

_GLOBAL = (LayerName.USER, LayerName.BASE)


@dataclass(slots=True)
class Transfer:
    """What a push or pull moved, per layer."""

    layers: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    memories: dict[str, int] = field(default_factory=dict)
    """Memory rows moved: ``project`` (the project's), ``user`` (one actor's own)."""
    context: int | None = None
    """Progressive context rows moved (None: not asked for)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"layers": self.layers, "skipped": self.skipped,
                               "files": self.files, "memories": self.memories}
        if self.context is not None:
            out["context"] = self.context
        return out


def _check_schema(store: PgStore, files: LayerSet) -> None:
    theirs, ours = files.schema(), store.schema()
    if theirs is None or ours is None:
        return
    if (theirs.dim, theirs.element_type) != (ours.dim, ours.element_type):
        raise SchemaMismatchError(
            f"the layer files have {theirs.dim}-dim {theirs.element_type} vectors, project "
            f"{store.project} has {ours.dim}-dim {ours.element_type}: they cannot be merged")
    check_compatible(theirs.profile, ours.profile, a_name="the layer files",
                     b_name=f"project {store.project}",
                     consequence="their vectors cannot be searched together")


def push(store: PgStore, files: LayerSet, *, replace_base: bool = False,
         on_layer: Callable[[str, int], None] | None = None,
         actor_files: tuple[str, LayerSet] | None = None) -> Transfer:
    """Upload the present layers of ``files`` into ``store``'s project (module docstring);
    their memories become memory rows (:mod:`sediment.pg.memory_transfer`).

    ``replace_base`` lets a new compiled base replace the project's base; the adapter
    decides who may ask for it (a reviewer). ``actor_files`` (an actor and their own
    memory files) uploads that actor's own memories too."""
    layers = files.layers()
    if not layers:
        raise NotFoundError("no layer files to push (looked for "
                            f"{', '.join(n.file_name for n in LayerName)})")
    out = Transfer()
    with store.transaction(), store.db.connection() as conn:
        conn.execute("SET LOCAL statement_timeout = 0")
        _check_schema(store, files)
        present = set(store.present())
        base = next((la for la in layers if la.name is LayerName.BASE), None)
        if base is not None and LayerName.BASE in present:
            if replace_base:
                conn.execute("DELETE FROM layers WHERE project = %s AND layer = 'base'",
                             (store.project,))
                present.discard(LayerName.BASE)
            elif not _same_base(store, list(base.file.chunks())):
                raise PermissionDeniedError(
                    f"project {store.project} already has a different base layer; only a "
                    "reviewer replaces it, with a new compiled base (`sediment push "
                    "--replace-base`)")
        mem_ids = memory_ids(files)
        memory: list[MemoryRow] = []
        for layer in layers:
            f, name = layer.file, layer.name
            every = list(f.chunks())
            moved = {i for i, c in enumerate(every)
                     if name is LayerName.LOCAL and is_memory_row(c, mem_ids)}
            memory += [memory_row(name.value, every[i], f.vector(i)) for i in sorted(moved)]
            plain = [c for i, c in enumerate(every) if i not in moved]
            keep = new_ids(conn, store.project, name.value, plain)
            rows = [i for i, c in enumerate(every) if i not in moved and c.id in keep]
            vectors = (np.stack([f.vector(i) for i in rows]) if rows
                       else np.zeros((0, f.dim), dtype=np.float32))
            store.ensure_layer(name, f.dim, f.element_type, f.embedding_profile,
                               metadata=dict(f.metadata or {}) if name not in present else None,
                               quant_scale=float(f.quant_scale) if f.element_type == "i8"
                               else None)
            if rows:
                store.insert(name, [every[i] for i in rows], vectors)
            store.note_ids(name, [i for i in (recorded_high_water(f.metadata),
                                              *(c.id for c in every)) if i])
            out.layers[name.value] = len(rows)
            out.skipped[name.value] = len(plain) - len(rows)
            if on_layer is not None:
                on_layer(name.value, len(rows))
        out.memories["project"] = push_project(conn, store.project, memory,
                                               memory_ids(files, _GLOBAL))
        if actor_files is not None:
            out.memories["user"] = push_actor(conn, *actor_files)
    with store.cursor() as cur:
        # the planner's row counts, for every query after
        cur.execute("ANALYZE chunks, posting_blocks")
    schema = store.schema()
    if schema is not None and schema.dim:
        ensure_vector_index(store, schema.dim,
                            dot=unit_vectors(schema.profile))
    return out


def _same_base(store: PgStore, chunks: list[Chunk]) -> bool:
    """Whether the project's base holds exactly ``chunks`` (ids, kinds, contents): the
    same compiled base pushed again, which adds nothing. Compared by a digest the server
    computes, so a large base's contents do not travel back."""
    digest = hashlib.md5(usedforsecurity=False)
    for i, c in enumerate(sorted(chunks, key=lambda c: c.id)):
        kind = hashlib.md5(c.kind.encode(), usedforsecurity=False).hexdigest()
        content = hashlib.md5(c.content.encode(), usedforsecurity=False).hexdigest()
        digest.update(f"{',' if i else ''}{c.id}:{kind}:{content}".encode())
    with store.cursor() as cur:
        cur.execute("SELECT count(*), md5(string_agg(id::text || ':' || md5(kind) || ':' || "
                    "md5(content), ',' ORDER BY id)) FROM chunks WHERE project = %s AND "
                    "layer = 'base'", (store.project,))
        got = cur.fetchone()
    return got is not None and int(got[0]) == len(chunks) and got[1] == digest.hexdigest()


def pull(store: PgStore, directory: Path, *, force: bool = False,
         actor_files: tuple[str, LayerSet] | None = None) -> Transfer:
    """Write the project's layers, its memory rows among them, as files in ``directory``
    (and, with ``actor_files``, that actor's own memories as their files); ``force``
    overwrites. Every file is built before any is put in place, so a failure leaves the
    directory as it was."""
    if not directory.is_dir():
        raise NotFoundError(f"--dir {directory}: no such directory")
    with store.db.connection() as conn:
        memories = project_rows(conn, store.project)
    names = set(store.present()) | {n for n in LayerName if n.value in memories}
    if not names:
        raise NotFoundError(f"project {store.project} has no layers ({store.url.redacted})")
    targets = {n: directory / n.file_name for n in PRECEDENCE if n in names}
    refuse_existing(targets.values(), force, "the server's layers")
    schema = store.schema()
    out = Transfer()
    with Staging() as staging:
        for name, path in targets.items():
            summary = store.summary(name, max_ids=0)
            mine = memories.get(name.value, [])
            pairs: list[Pair] = list(store.chunks(name)) if summary is not None else []
            if mine:
                pairs = sorted([*pairs, *mine], key=lambda p: p[0].id)
            n = stage(staging, path, pairs,
                      dim=summary.dim if summary is not None and summary.dim else
                      schema.dim if schema is not None else _memory_dim(memories),
                      element_type=summary.element_type if summary is not None else
                      schema.element_type if schema is not None else "f32",
                      quant_scale=store.quant_scale(name),
                      metadata=(store.layer_metadata(name) or {}) if summary is not None else
                      new_metadata(schema.profile if schema is not None else None))
            out.layers[name.value] = n - len(mine)
            out.files.append(str(path))
        out.memories["project"] = sum(len(v) for v in memories.values())
        if actor_files is not None:
            out.memories["user"] = pull_actor(store, *actor_files, force=force,
                                              staging=staging)
    return out


def _memory_dim(memories: dict[str | None, list[Pair]]) -> int:
    return next((int(v.shape[0]) for rows in memories.values() for _, v in rows
                 if v is not None), 0)

"""Moving a project between layer files and a server: ``push`` (files -> project), ``pull``.

A push keeps everything a layer file holds: ids, kinds, contents, authors, confidences,
times, sources, vectors (i8 layers keep their scale), and the file's metadata (embedding
profile, id ranges, ``id_high_water``); the id sequence then moves past the largest id, so
the server never gives out an id the files used. Into a project that already has chunks,
a push may only add: one id names one row of a project, whichever table holds it
(``chunks``, ``memories``, ``context_rows``), so a chunk whose id the project's layer
already holds is skipped when identical and refused when different, and an id the files
wrote at run time that the project uses for other content in another layer is refused
too, and so is an id the project's memory or context rows use (:func:`new_ids`). The base
is never merged: the same base pushed again adds nothing, a different one replaces the
project's only when the caller says so (``replace_base``), which the adapters allow to
reviewers only.

A pull writes each of the project's layers as an RFC layer file, refusing to overwrite a
file that exists unless told to; the files are built beside their targets and put in
place together (:mod:`sediment.pg.staging`), so a failed pull changes nothing.

Memories travel too. In layer files the memories of a project (project scope, global,
proposals) and their events sit in the project's layers beside other chunks. On a server,
global memories and proposals stay in the layers (:mod:`sediment.pg.memory`), so they
travel as chunks; the project-scope ones, bound to an actor, are rows of the ``memories``
table, which every query binds to an actor. A push therefore takes the local layer's
memories and events out of what it uploads and writes them as memory rows with their ids,
owners (the actor in a memory's kind, or in an event's JSON), times, vectors and state (a
superseded or forgotten version is hidden); a use event that counts global memories is
split as the server's own writes split it, so every actor sees a global memory's uses. A
pull writes them back into the local layer.

An actor's own memories (``u`` ids, ``<data dir>/actors/<actor>/``) are theirs, not the
project's: they go to a server only when asked (``push --user-memories``), and only that
actor's rows, owned by them. Rows that cannot keep their ids (an actor's own memories, a
context store in :mod:`sediment.pg.context_transfer`: every such file numbers from the same
start) take new ids from the server's one sequence, every reference following, and a
second push of them is refused, since it would duplicate them (:class:`Owned`).
``pull --user-memories`` writes the actor's rows back as their files, renumbered into the
actor range the files number from (``store.ids.ACTOR_IDS``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg.types.json import Jsonb

from sediment.errors import NotFoundError, PermissionDeniedError, SchemaMismatchError
from sediment.format import Chunk, encode_layer
from sediment.format.profile import check_compatible, unit_vectors
from sediment.memory.events import USE
from sediment.memory.model import parse_kind
from sediment.pg.database import Conn, next_ids, rows
from sediment.pg.memory import split_uses
from sediment.pg.search import ensure_vector_index
from sediment.pg.staging import Staging
from sediment.pg.store import PgStore, as_vector
from sediment.store import PRECEDENCE, LayerName, LayerSet
from sediment.store.events import (
    MEMORY_KIND_PREFIX,
    about_memories,
    event_content,
    hidden_by,
    parse_event,
)
from sediment.store.ids import WRITTEN_START, recorded_high_water
from sediment.store.refs import renumbered, renumbered_into

Pair = tuple[Chunk, npt.NDArray[np.float32] | None]
"""A chunk and its vector (None: it has none, as an event)."""
MEMORIES = "memories"
"""The place of a project's memory rows, beside its layers' names (:func:`new_ids`)."""
MAX_LISTED = 10
_PRIVATE = (MEMORIES, "context")
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
        out = asdict(self)
        if self.context is None:
            del out["context"]
        return out


# -- what every push and pull shares --------------------------------------------------
def listed_ids(ids: Sequence[int]) -> str:
    """Ids for a message: the first ``MAX_LISTED``, then how many more."""
    more = f" and {len(ids) - MAX_LISTED} more" if len(ids) > MAX_LISTED else ""
    return ", ".join(map(str, ids[:MAX_LISTED])) + more


def new_ids(conn: Conn, project: str, place: str, chunks: Sequence[Chunk]) -> set[int]:
    """The ids of ``chunks`` to write, ids kept, into ``place`` (a layer's name, or
    ``MEMORIES``): identical ones already there are left out. Refused, naming the ids: a
    different chunk under an id ``place`` holds; an id a memory or context row holds (for a
    memory row, any chunk too); a written id another layer gives other content (a compiled
    id may differ: an override keeps its target's id)."""
    if not chunks:
        return set()
    ids = [c.id for c in chunks]
    got = rows(conn, "SELECT layer, id, kind, content FROM chunks WHERE project = %s AND "
                     "id = ANY(%s) UNION ALL SELECT 'memories', id, kind, content FROM "
                     "memories WHERE project = %s AND store = 'p' AND id = ANY(%s) UNION ALL "
                     "SELECT 'context', id, '', '' FROM context_rows WHERE project = %s AND "
                     "id = ANY(%s)", (project, ids) * 3)
    here = {int(r[1]): (r[2], r[3]) for r in got if r[0] == place}
    private = {int(r[1]) for r in got if r[0] in _PRIVATE and r[0] != place}
    layers: dict[int, tuple[str, str]] = {}
    for r in got:
        if r[0] != place and r[0] not in _PRIVATE:
            layers.setdefault(int(r[1]), (r[2], r[3]))
    memory = place == MEMORIES

    def is_taken(c: Chunk) -> bool:
        if memory:
            return c.id in private or c.id in layers
        return c.id not in here and (c.id in private or (
            c.id >= WRITTEN_START and layers.get(c.id, (c.kind, c.content)) != (c.kind, c.content)))

    different = [c.id for c in chunks if c.id in here and here[c.id] != (c.kind, c.content)]
    taken = sorted({c.id for c in chunks if is_taken(c)})
    if memory and (different or taken):
        raise PermissionDeniedError(
            f"project {project} already holds other chunks under the memory ids "
            f"{listed_ids(sorted({*different, *taken}))}; a push into a project may only "
            "add new ids")
    if different:
        raise PermissionDeniedError(
            f"project {project} already holds different chunks under ids "
            f"{listed_ids(different)} in its {place} layer; a push into a project may only "
            "add new ids")
    if taken:
        raise PermissionDeniedError(
            f"project {project} already uses ids {listed_ids(taken)} for other chunks, "
            "memories or context items; the files and the server both gave them out, so "
            "pushing would merge unrelated chunks (pull the project, copy your chunks with "
            "`sediment write`, then push)")
    return {c.id for c in chunks if c.id not in here}


def insert(conn: Conn, table: str, columns: str, values: Sequence[tuple[Any, ...]]) -> None:
    marks = ", ".join(["%s"] * len(columns.split(",")))
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", values)


def read(conn: Conn, table: str, where: str, params: dict[str, str], group: str,
         confidence: str = "confidence") -> dict[str | None, list[Pair]]:
    """The rows of ``table`` that ``where`` selects, by their ``group`` column (the
    groups in order, None last), each group in id (commit) order."""
    got = rows(conn, f"SELECT {group}, id, kind, content, author, {confidence}, "
                     f"created_at_ms, sources, embedding FROM {table} WHERE {where} "
                     f"ORDER BY {group} IS NULL, {group}, id", params)
    out: dict[str | None, list[Pair]] = {}
    for r in got:
        chunk = Chunk(int(r[1]), str(r[2]), str(r[3]), str(r[4]), float(r[5]), int(r[6]),
                      tuple(s for s in r[7] or () if isinstance(s, int | str)))
        out.setdefault(None if r[0] is None else str(r[0]), []).append(
            (chunk, None if r[8] is None else as_vector(r[8], 0)))
    return out


@dataclass(frozen=True, slots=True)
class Owned:
    """An actor's rows of one table, which a push gives new ids: ``where`` selects them
    (over ``%(project)s`` and ``%(actor)s``), a pull groups them by ``group``; a second
    push is refused, saying the actor has that many ``twice`` (formatted with the
    project)."""

    table: str
    where: str
    group: str
    twice: str
    confidence: str = "confidence"

    def refuse_twice(self, conn: Conn, project: str, actor: str) -> None:
        got = rows(conn, f"SELECT count(*) FROM {self.table} WHERE {self.where}",
                   {"project": project, "actor": actor})
        if got and int(got[0][0]):
            raise PermissionDeniedError(f"actor {actor} already has {int(got[0][0])} "
                                        + self.twice.format(project=project))

    def renumbered(self, conn: Conn, project: str, actor: str, chunks: Sequence[Chunk]
                   ) -> list[Chunk]:
        """``chunks`` (in their order) with new ids of the server's sequence, given in id
        order so their commit order stays, every reference among them following; refused
        when ``actor`` has such rows already."""
        self.refuse_twice(conn, project, actor)
        return renumbered(chunks, next_ids(conn, len(chunks)))

    def read(self, conn: Conn, project: str, actor: str) -> dict[str | None, list[Pair]]:
        return read(conn, self.table, self.where, {"project": project, "actor": actor},
                    self.group, self.confidence)


# -- memories -------------------------------------------------------------------------
_MEMORY_COLUMNS = ("project, store, id, layer, owner, shared, is_event, kind, content, "
                   "author, confidence, created_at_ms, sources, data, embedding, hidden")
ACTORS = Owned(MEMORIES, "project = '' AND store = 'u' AND owner = %(actor)s", "layer",
               "own memory rows on the server; pushing their files again would duplicate "
               "them (pull them with `sediment pull --user-memories`, or forget them there "
               "first)")
"""An actor's own memory rows."""
USER_LAYERS = {LayerName.USER: "user", LayerName.LOCAL: "usage"}
"""An actor's own files (``FileMemoryStore.actor_set``) and the rows' layer on a server."""


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """One chunk of a memory store on its way to ``memories``."""

    layer: str
    chunk: Chunk
    vector: npt.NDArray[np.float32] | None
    data: dict[str, Any] | None


def memory_ids(files: LayerSet, names: Sequence[LayerName] | None = None) -> set[int]:
    """The ids of every memory (``memory.*`` chunk) in ``files`` (in its layers
    ``names``)."""
    out: set[int] = set()
    for layer in files.layers(names):
        out.update(c.id for c in layer.file.chunks() if c.kind.startswith(MEMORY_KIND_PREFIX))
    return out


def local_rows(files: LayerSet) -> list[MemoryRow]:
    """What leaves the layers for ``memories``: the local layer's memories and the events
    about memories."""
    ids = memory_ids(files)
    return [memory_row(LayerName.LOCAL.value, c, layer.file.vector(i))
            for layer in files.layers([LayerName.LOCAL]) for i, c in enumerate(layer.file.chunks())
            if c.kind.startswith(MEMORY_KIND_PREFIX) or about_memories(c, ids)]


def memory_row(layer: str, chunk: Chunk, vector: npt.NDArray[np.float32] | None) -> MemoryRow:
    if chunk.kind.startswith(MEMORY_KIND_PREFIX):
        return MemoryRow(layer, chunk, None if vector is None else
                         np.asarray(vector, dtype=np.float32), None)
    return MemoryRow(layer, chunk, None, parse_event(chunk))


def _owner(row: MemoryRow) -> str:
    if row.data is None:
        parsed = parse_kind(row.chunk.kind)
        return parsed[1] if parsed else ""
    actor = row.data.get("actor")
    return actor if isinstance(actor, str) else ""


def _hidden(rows: Iterable[MemoryRow]) -> set[int]:
    """Memory ids a supersede or forget event hides (as the server's writes mark them)."""
    return {h for r in rows if r.data is not None
            and (h := hidden_by(r.chunk.kind, r.data, r.chunk.sources)) is not None}


def _values(project: str, prefix: str, row: MemoryRow, owner: str, shared: bool,
            hidden: set[int]) -> tuple[Any, ...]:
    c = row.chunk
    return (project, prefix, c.id, row.layer, owner, shared, row.data is not None, c.kind,
            c.content, c.author, float(c.confidence), c.created_at_ms,
            Jsonb(list(c.sources)), Jsonb(row.data) if row.data is not None else None,
            row.vector, row.data is None and c.id in hidden)


def _push_project(conn: Conn, project: str, rows: list[MemoryRow], glob: set[int]) -> int:
    """Write a project's memory rows (ids kept; ``glob``: the ids of its global memories,
    which stay in its layers): identical rows already there are skipped, an id another
    row of the project uses (in any table) is refused. Returns how many were written."""
    keep = new_ids(conn, project, MEMORIES, [r.chunk for r in rows])
    new = [r for r in rows if r.chunk.id in keep]
    hidden, shared = _hidden(rows), {str(g) for g in glob}
    out: list[tuple[Any, ...]] = []
    splits: list[MemoryRow] = []
    for r in new:
        uses = r.data.get("uses") if r.data is not None else None
        if r.chunk.kind == USE and isinstance(uses, dict) and any(k in shared for k in uses):
            splits.append(r)
        else:
            out.append(_values(project, "p", r, _owner(r), False, hidden))
    fresh = iter(next_ids(conn, len(splits)))
    for r in splits:
        # a use event counting global memories becomes the actor's part (its id) and a
        # shared part (a fresh id) for the global ones, as ``PgMemoryStore.append`` does
        assert r.data is not None
        cids = iter((r.chunk.id, next(fresh)))
        for data, part_shared in split_uses(r.data, shared):
            c = r.chunk
            chunk = Chunk(next(cids), c.kind, event_content(**data), c.author, c.confidence,
                          c.created_at_ms,
                          tuple(sorted(int(k) for k in data["uses"] if k.isdigit())))
            out.append(_values(project, "p", MemoryRow(r.layer, chunk, None, data),
                               _owner(r), part_shared, set()))
    insert(conn, MEMORIES, _MEMORY_COLUMNS, out)
    return len(new)


def _push_actor(conn: Conn, actor: str, files: LayerSet) -> int:
    """Write the rows of ``actor``'s own memory files that are theirs (a memory of their
    kinds, an event they made) as their rows, with new ids (module docstring)."""
    rows: list[MemoryRow] = []
    for layer in files.layers(USER_LAYERS):
        for i, c in enumerate(layer.file.chunks()):
            row = memory_row(USER_LAYERS[layer.name], c, layer.file.vector(i))
            if _owner(row) == actor:
                rows.append(row)
    if not rows:
        return 0
    moved = [memory_row(r.layer, c, r.vector) for r, c in zip(
        rows, ACTORS.renumbered(conn, "", actor, [r.chunk for r in rows]), strict=True)]
    hidden = _hidden(moved)
    insert(conn, MEMORIES, _MEMORY_COLUMNS,
           [_values("", "u", r, actor, False, hidden) for r in moved])
    return len(moved)


# -- push -----------------------------------------------------------------------------
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
    """Upload the present layers of ``files`` into ``store``'s project; their memories
    become memory rows (module docstring).

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
        memory = local_rows(files)
        moved = {r.chunk.id for r in memory}
        for layer in layers:
            f, name = layer.file, layer.name
            every = list(f.chunks())
            plain = [c for c in every if name is not LayerName.LOCAL or c.id not in moved]
            keep = new_ids(conn, store.project, name.value, plain)
            rows = [i for i, c in enumerate(every) if c.id in keep]
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
        out.memories["project"] = _push_project(conn, store.project, memory,
                                               memory_ids(files, _GLOBAL))
        if actor_files is not None:
            out.memories["user"] = _push_actor(conn, *actor_files)
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


# -- pull -----------------------------------------------------------------------------
def refuse_existing(paths: Iterable[Path], force: bool, what: str) -> None:
    """A pull overwrites files only when told to (``force``)."""
    existing = [str(p) for p in paths if p.exists()]
    if existing and not force:
        raise PermissionDeniedError(f"{', '.join(existing)} already exist; pass --force to "
                                    f"overwrite them with {what}")


def new_metadata(profile: dict[str, Any] | None) -> dict[str, Any]:
    """The metadata of a layer file a pull makes that the server holds no metadata for."""
    return {"v": 1, "tool_name": "sediment",
            **({"embedding_profile": profile} if profile is not None else {})}


def stage(staging: Staging, path: Path, pairs: Sequence[Pair], *, dim: int,
          metadata: dict[str, Any], element_type: str = "f32",
          quant_scale: float | None = None) -> int:
    """Stage ``pairs`` as the layer file ``path``, its ``id_high_water`` covering their ids;
    a chunk without a vector of the layer's width (an event) gets the zero vector, as the
    file stores write them. Returns how many chunks."""
    zero = np.zeros(dim, dtype=np.float32)
    vectors = [v if v is not None and v.shape[0] == dim else zero for _, v in pairs]
    if pairs:
        metadata = {**metadata, "id_high_water": max(recorded_high_water(metadata),
                                                     max(c.id for c, _ in pairs))}
    staging.write(path, encode_layer(
        [c for c, _ in pairs], np.stack(vectors) if vectors else np.zeros((0, dim), np.float32),
        dim=dim, element_type=element_type, quant_scale=quant_scale, metadata=metadata))
    return len(pairs)


def pull(store: PgStore, directory: Path, *, force: bool = False,
         actor_files: tuple[str, LayerSet] | None = None) -> Transfer:
    """Write the project's layers, its memory rows among them, as files in ``directory``
    (and, with ``actor_files``, that actor's own memories as their files); ``force``
    overwrites. Every file is built before any is put in place, so a failure leaves the
    directory as it was."""
    if not directory.is_dir():
        raise NotFoundError(f"--dir {directory}: no such directory")
    with store.db.connection() as conn:
        memories = read(conn, MEMORIES, "project = %(project)s AND store = 'p'",
                        {"project": store.project}, "layer")
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
            out.memories["user"] = _pull_actor(store, *actor_files, force=force,
                                              staging=staging)
    return out


def _memory_dim(memories: dict[str | None, list[Pair]]) -> int:
    return next((int(v.shape[0]) for rows in memories.values() for _, v in rows
                 if v is not None), 0)


def _pull_actor(store: PgStore, actor: str, files: LayerSet, *, force: bool,
               staging: Staging) -> int:
    """Stage ``actor``'s own memories as their files (``files``: the actor's set); refuses
    to overwrite unless ``force``. The rows get fresh ids of the actor range
    (``files.ids``), above any the files used, their references following: the server
    numbered them from its one sequence, in the project's range, so kept they could be ids
    the pulled project's writers give next."""
    with store.db.connection() as conn:
        got = ACTORS.read(conn, store.project, actor)
    if not got:
        return 0
    targets = {n: files.paths[n] for n, la in USER_LAYERS.items()
               if la in got and n in files.paths}
    refuse_existing(targets.values(), force, f"actor {actor}'s memories")
    groups, fresh = renumbered_into([[c for c, _ in got.get(la, ())]
                                     for la in USER_LAYERS.values()],
                                    files.ids, files.written_high_water())
    schema = store.schema()
    metadata = {**new_metadata(schema.profile if schema is not None else None),
                "id_high_water": fresh.stop - 1}
    n = 0
    for (name, la), group in zip(USER_LAYERS.items(), groups, strict=True):
        if name in targets:
            n += stage(staging, targets[name], list(zip(group, (v for _, v in got[la]),
                                                        strict=True)),
                       dim=schema.dim if schema is not None else 0, metadata=metadata)
    return n

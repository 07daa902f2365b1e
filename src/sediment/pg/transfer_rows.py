"""What the three transfers share: layers (:mod:`sediment.pg.transfer`), memories
(:mod:`sediment.pg.memory_transfer`) and progressive context
(:mod:`sediment.pg.context_transfer`).

One id names one row of a project, whichever table holds it (``chunks``, ``memories``,
``context_rows``). A push that keeps the files' ids (the layers, a project's memories) checks
them against all three tables (:func:`new_ids`). One that cannot keep them (an actor's own
memories, a context store: every such file numbers from the same start) takes new ids from
the server's one sequence, every reference following, and is refused when the actor has
such rows there already, since a second push would duplicate them (:class:`Owned`). A pull
reads rows back by group (:func:`read`) and stages whole layer files (:func:`stage`), none
of them put in place before all are built.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import PermissionDeniedError
from sediment.format import Chunk, encode_layer
from sediment.pg.database import Conn, next_ids, rows
from sediment.pg.staging import Staging
from sediment.pg.store import as_vector
from sediment.store.ids import WRITTEN_START, recorded_high_water
from sediment.store.refs import renumbered

Pair = tuple[Chunk, npt.NDArray[np.float32] | None]
"""A chunk and its vector (None: it has none, as an event)."""
MEMORIES = "memories"
"""The place of a project's memory rows, beside its layers' names (:func:`new_ids`)."""
MAX_LISTED = 10
_PRIVATE = (MEMORIES, "context")


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
    (over ``%(project)s`` and ``%(actor)s``), a pull groups them by ``group``; ``rows``,
    ``again`` and ``hint`` word the refusal of a second push."""

    table: str
    where: str
    group: str
    rows: str
    again: str
    hint: str
    confidence: str = "confidence"

    def refuse_twice(self, conn: Conn, project: str, actor: str) -> None:
        got = rows(conn, f"SELECT count(*) FROM {self.table} WHERE {self.where}",
                   {"project": project, "actor": actor})
        if got and int(got[0][0]):
            raise PermissionDeniedError(
                f"actor {actor} already has {int(got[0][0])} "
                f"{self.rows.format(project=project)}; pushing {self.again} again would "
                f"duplicate them ({self.hint})")

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

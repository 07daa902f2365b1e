"""The context store on PostgreSQL (the second ``ContextStore``; the first is the files').

Rows of ``context_rows`` (migration 0052) hold the items and events the layer files would,
per project. A store bound to an actor (``actor=...``, what the server uses: one per
caller) reads, counts and changes only that actor's rows: the actor is a condition of
every query, so one actor's context is out of another's reach whatever the service above
does. Unbound (``actor=None``), it is the whole project's, as the file store is. Archiving
marks rows with the day instead of moving them to another file; dropping deletes them.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from sediment.context.files import EVENT_PREFIX
from sediment.context.store import ITEM_PREFIX, NewEvent, NewItem, StoredEvent, StoredItem
from sediment.format import Chunk
from sediment.pg.database import Database, bump, next_ids, revision, row, rows
from sediment.pg.store import as_vector
from sediment.store.commit import resolve_new
from sediment.store.events import event_content


class PgContextStore:
    """Context items and events of the store URL's project (of one actor, when bound)."""

    def __init__(self, database: Database, *, dim: int, actor: str | None = None) -> None:
        self.db = database
        self.project = database.project
        self.dim = dim
        self.actor = actor
        self.subject = f"context:{self.project}"
        """What ``version`` reads: every change of the project's rows bumps it."""

    def bound(self, actor: str) -> PgContextStore:
        """The same store seen by ``actor`` alone."""
        return PgContextStore(self.db, dim=self.dim, actor=actor)

    def _who(self) -> tuple[str, dict[str, Any]]:
        """The condition every query adds, and its parameters."""
        mine = "" if self.actor is None else " AND actor = %(actor)s"
        return "project = %(project)s" + mine, {"project": self.project, "actor": self.actor}

    def append(self, items: Sequence[NewItem], events: Sequence[NewEvent]) -> list[int]:
        now = int(time.time() * 1000)
        with self.db.transaction() as conn:
            ids = next_ids(conn, len(items) + len(events))
            resolved = [(resolve_new(e.data, ids),
                         [int(s) for s in resolve_new(list(e.subjects), ids)]) for e in events]
            owners: dict[int, str] = {}
            for data, _ in resolved:
                item = data.get("item")
                if isinstance(item, int) and isinstance(data.get("actor"), str):
                    owners.setdefault(item, data["actor"])
            out: list[tuple[Any, ...]] = []
            for cid, it in zip(ids, items, strict=False):
                vec = np.asarray(it.vector, dtype=np.float32).reshape(-1)
                out.append((self.project, cid, self.actor or owners.get(cid, ""), False,
                            it.kind, it.content, it.author, now, Jsonb(list(it.sources)),
                            [s for s in it.sources if isinstance(s, int)], None, vec))
            for cid, e, (data, subjects) in zip(ids[len(items):], events, resolved,
                                                strict=True):
                owner = self.actor or str(data.get("actor") or "")
                out.append((self.project, cid, owner, True, e.kind, event_content(**data),
                            e.author, now, Jsonb(subjects), subjects, Jsonb(data), None))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO context_rows (project, id, actor, is_event, kind, content, "
                    "author, created_at_ms, sources, subjects, data, embedding) VALUES (%s, "
                    "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", out)
            bump(conn, self.subject)
        return ids[:len(items)]

    def items(self, *, archived: bool = False) -> list[StoredItem]:
        who, params = self._who()
        params.update(archived=archived, prefix=ITEM_PREFIX + "%")
        with self.db.connection() as conn:
            got = rows(
                conn, "SELECT id, kind, content, author, created_at_ms, sources, embedding, "
                f"archive FROM context_rows WHERE {who} AND NOT is_event AND kind LIKE "
                "%(prefix)s AND (archive IS NULL OR %(archived)s) "
                "ORDER BY archive IS NULL, archive, id", params)
        return [StoredItem(Chunk(int(r[0]), str(r[1]), str(r[2]), str(r[3]), 1.0, int(r[4]),
                                 tuple(r[5] or ())),
                           as_vector(r[6], self.dim),
                           r[7] is not None,
                           f"AGENTS.archive-{r[7]}.db" if r[7] is not None else "")
                for r in got]

    def events(self) -> list[StoredEvent]:
        """The archived events (older, by day) then the active ones, each in commit order,
        as the file store lists them."""
        who, params = self._who()
        with self.db.connection() as conn:
            got = rows(
                conn, "SELECT id, kind, created_at_ms, data, sources FROM context_rows "
                f"WHERE {who} AND is_event ORDER BY archive IS NULL, archive, id", params)
        return [StoredEvent(int(r[0]), str(r[1]), int(r[2]), dict(r[3]), tuple(r[4] or ()))
                for r in got if isinstance(r[3], dict)]

    def archive(self, ids: Sequence[int], day: str) -> int:
        if not ids:
            return 0
        who, params = self._who()
        params.update(ids=list(ids), day=day, events=EVENT_PREFIX + "%",
                      prefix=ITEM_PREFIX + "%")
        with self.db.transaction() as conn:
            got = rows(
                conn, f"UPDATE context_rows SET archive = %(day)s WHERE {who} AND archive IS "
                "NULL AND (id = ANY(%(ids)s) OR (is_event AND kind LIKE %(events)s AND "
                "subjects && %(ids)s::bigint[])) RETURNING kind LIKE %(prefix)s", params)
            if got:
                bump(conn, self.subject)
        return sum(1 for r in got if r[0])

    def drop(self, ids: Sequence[int]) -> int:
        if not ids:
            return 0
        who, params = self._who()
        params["ids"] = list(ids)
        with self.db.transaction() as conn:
            got = rows(conn, f"DELETE FROM context_rows WHERE {who} AND archive IS NULL "
                             "AND id = ANY(%(ids)s) RETURNING id", params)
            if got:
                bump(conn, self.subject)
        return len(got)

    def size_bytes(self) -> int:
        who, params = self._who()
        with self.db.connection() as conn:
            got = row(conn, "SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM context_rows "
                            f"AS c WHERE {who}", params)
        return int(got[0]) if got else 0

    def version(self) -> Hashable:
        with self.db.connection() as conn:
            return revision(conn, self.subject)

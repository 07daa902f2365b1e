"""Data steps of migrations that need Sediment's own code, run in the migration's
transaction right after its SQL (:mod:`sediment.pg.migrate`).

0070 moves a project's global memories and memory proposals from ``memories`` into its
layers (the migration's SQL says why); a chunk's BM25 terms come from Sediment's analyzer
(:func:`sediment.pg.store.lexical`), which SQL cannot compute, so the rows are moved here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

Cursor = psycopg.Cursor[tuple[object, ...]]


def move_shared_memories(cur: Cursor) -> None:
    """Copy every 'p' row of the user, base and delta layers into ``chunks`` (ids kept; an
    event gets the zero vector, as the files write it; a row whose id the layer already
    holds, the duplicate an earlier pull and push made, is left out), then drop them from
    ``memories``."""
    from pgvector.psycopg import register_vector

    from sediment.pg.store import lexical

    register_vector(cur.connection)
    cur = cur.connection.cursor()  # a cursor takes the connection's adapters when made
    cur.execute(
        "SELECT m.project, m.layer, m.id, m.kind, m.content, m.author, m.confidence, "
        "m.created_at_ms, m.sources, m.embedding, l.dim FROM memories AS m JOIN layers AS l "
        "ON l.project = m.project AND l.layer = m.layer WHERE m.store = 'p' AND "
        "m.layer IN ('user', 'base', 'delta') ORDER BY m.project, m.layer, m.id")
    moved = cur.fetchall()
    rows = []
    for project, layer, cid, kind, content, author, confidence, created, sources, vec, dim \
            in moved:
        width = int(dim)  # type: ignore[call-overload]
        embedding: np.ndarray | None = None
        if vec is not None and np.asarray(vec).shape == (width,):
            embedding = np.asarray(vec, dtype=np.float32)
        elif width:
            embedding = np.zeros(width, dtype=np.float32)
        tf, length = lexical(str(content))
        rows.append((project, layer, cid, kind, content, author, confidence, created,
                     Jsonb(sources), width, embedding, Jsonb(tf), length))
    if rows:
        cur.executemany(
            "INSERT INTO chunks (project, layer, id, kind, content, author, confidence, "
            "created_at_ms, sources, dim, embedding, lex_tf, lex_len) VALUES (%s, %s, %s, "
            "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (project, layer, id) "
            "DO NOTHING", rows)
    cur.execute("DELETE FROM memories WHERE store = 'p' AND layer IN ('user', 'base', "
                "'delta')")


STEPS: dict[int, Callable[[Cursor], None]] = {70: move_shared_memories}
"""Migration number -> its data step."""

"""The server's one id sequence ends with the project range of written ids (migration 0075,
``store/ids.py`` ``PROJECT_IDS``): layers pulled to files keep their ids, so an id past it
would land in the context range there. Past the end a write is a one-line error naming the
range; a push of layer files holding ids of another range never moves the sequence there.
The boundary is reached cheaply: the sequence is set near its end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sediment as api
from sediment.errors import ValidationError
from sediment.pg import connect, migrate
from sediment.store import LayerName, LayerSet, NewChunk
from sediment.store.ids import PROJECT_IDS
from tests.conftest import Runner
from tests.pg.team import seed_project

RANGE = f"project range of written ids ({PROJECT_IDS.first}..{PROJECT_IDS.last})"


def _sequence(url: str) -> tuple[int, int]:
    """(the next id the sequence gives, its last value)."""
    with connect(url) as conn:
        last, called = conn.execute("SELECT last_value, is_called FROM chunk_ids").fetchone()
        (top,) = conn.execute("SELECT max_value FROM pg_sequences "
                              "WHERE sequencename = 'chunk_ids'").fetchone()
    return int(last) + (1 if called else 0), int(top)


def _set(url: str, last: int) -> None:
    with connect(url) as conn:
        conn.execute("SELECT setval('chunk_ids', %s)", (last,))
        conn.commit()


def test_the_sequence_ends_with_the_project_range(pg_url: str) -> None:
    assert _sequence(pg_url)[1] == PROJECT_IDS.last


def test_a_write_past_the_project_range_is_a_clear_error(pg_url: str, tmp_path: Path,
                                                         sediment: Runner) -> None:
    """The last ids of the range are given (a write takes two: the chunk and the event
    recording its actor); the next write, a memory save (rows of their
    own table, same sequence) and a context item each fail with one line naming the range,
    and write nothing."""
    seed_project(pg_url, tmp_path)
    _set(pg_url, PROJECT_IDS.last - 2)
    store = ["--store", pg_url, "--embedder", "hash"]
    last = sediment("write", *store, "--kind", "note", "--content", "The last id.",
                    "--confidence", "0.5", "--json")
    assert last.code == 0, last.err
    assert last.json()["id"] == PROJECT_IDS.last - 1
    tries = [("write", "--kind", "note", "--content", "One too many.", "--confidence", "0.5"),
             ("memory", "save", "--scope", "project", "--category", "fact",
              "One memory too many.")]
    for args in tries:
        r = sediment(*args, *store)
        assert r.code != 0, (args, r.out)
        assert RANGE in r.err and "exhausted" in r.err, (args, r.err)
        assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    with api.open(pg_url, embedder="hash", actor="ann") as ann, \
            pytest.raises(ValidationError, match=RANGE.replace("(", r"\(").replace(")", r"\)")):
        ann.store_context("One item too many.", "task")
    with connect(pg_url) as conn:
        (n,) = conn.execute("SELECT count(*) FROM chunks WHERE content LIKE '%too many%'"
                            ).fetchone()
        (m,) = conn.execute("SELECT count(*) FROM memories").fetchone()
    assert (n, m) == (0, 0)


def test_a_push_of_ids_above_the_project_range_leaves_the_sequence(pg_url: str,
                                                                   tmp_path: Path,
                                                                   sediment: Runner) -> None:
    """A local layer holding an id of the project range and one above it (a hand-made or
    foreign file's): the push keeps both ids, the sequence moves past the first only, and
    the next write takes the id after it (on the old code it took the one after the
    foreign id, in the context range)."""
    ours, foreign = PROJECT_IDS.first + 40, PROJECT_IDS.last + 1000
    ls = LayerSet.from_directory(tmp_path)
    with api.open(tmp_path, embedder="hash") as s:
        profile = s.embedder.profile.to_dict()
        vecs = s.embedder.embed(["ours", "foreign"])
    ls.append(LayerName.LOCAL, [NewChunk("note", "Ours.", "human", 0.5, id=ours),
                                NewChunk("note", "Foreign.", "human", 0.5, id=foreign)],
              np.asarray(vecs), profile=profile)
    pushed = sediment("push", "--store", pg_url, "--dir", str(tmp_path))
    assert pushed.code == 0, pushed.err
    assert _sequence(pg_url)[0] == ours + 1
    nxt = sediment("write", "--store", pg_url, "--embedder", "hash", "--kind", "note",
                   "--content", "Next.", "--confidence", "0.5", "--json")
    assert nxt.code == 0, nxt.err
    assert nxt.json()["id"] == ours + 1


def test_0075_leaves_a_sequence_already_past_the_range(pg_empty_url: str) -> None:
    """A database whose sequence went past the range before 0075 migrates (the end cannot
    be lowered below the current value) and refuses the ids past it."""
    from sediment.pg.database import Database, next_ids

    with connect(pg_empty_url) as conn:
        migrate(conn, target=74)
        conn.execute("SELECT setval('chunk_ids', %s)", (PROJECT_IDS.last + 5,))
        conn.commit()
        migrate(conn)
    assert _sequence(pg_empty_url)[1] == 2**32 - 1
    db = Database(pg_empty_url)
    try:
        with db.connection() as conn, pytest.raises(ValidationError, match="exhausted"):
            next_ids(conn, 1)
    finally:
        db.close()

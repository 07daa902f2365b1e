"""PostgreSQL search's statements: the approximate query walks the HNSW index, the hidden
ids are read through the events index, the walk's breadth is set once per connection (and
never leaks out of a transaction), and a chunk reads back as written. Layers are made
"large" by lowering the threshold for an index, so a few hundred rows exercise the path
100,000 would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from sediment.format import Chunk, encode_layer
from sediment.pg import PgStore, parse_store_url
from sediment.pg import search as pg_search
from sediment.pg.database import Database
from sediment.pg.transfer import push
from sediment.search import SearchRequest
from sediment.store import LayerName, LayerSet, NewChunk
from sediment.store.events import FORGET, WRITE, event_content

ROWS = 400
DIM = 16
PROFILE = {"backend": "test", "model": "random-unit", "revision": "1", "dim": DIM,
           "output_norm": "l2"}


def _unit(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


@pytest.fixture
def store(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PgStore]:
    """A project whose base of ROWS unit vectors counts as large enough for HNSW."""
    monkeypatch.setattr(pg_search, "ANN_MIN_ROWS", 100)
    chunks = [Chunk(i, "note", f"note {i} about topic{i % 7}", "human", 0.7, 1000 + i)
              for i in range(1, ROWS + 1)]
    (tmp_path / "AGENTS.db").write_bytes(encode_layer(
        chunks, _unit(ROWS, 1), dim=DIM, metadata={"v": 1, "embedding_profile": PROFILE}))
    s = PgStore(pg_url)
    push(s, LayerSet.from_directory(tmp_path))
    yield s
    s.close()


def _explain(store: PgStore, query: pg_search.Query, *settings: str) -> str:
    with store.cursor() as cur:
        for setting in settings:
            cur.execute(setting)
        cur.execute(b"EXPLAIN " + query[0].as_bytes(cur), query[1])
        return "\n".join(str(r[0]) for r in cur.fetchall())


def _search(store: PgStore, q: np.ndarray, **kw: object) -> list[tuple[int, bool]]:
    request = SearchRequest(k=10, mode="vector", **kw)  # type: ignore[arg-type]
    return [(h.chunk.id, h.approximate)
            for h in store.search(request, q, normalised=True).hits]


def test_the_approximate_query_walks_the_hnsw_index(store: PgStore) -> None:
    q = _unit(1, 2)[0]
    kinds, args = pg_search._kind_filter(SearchRequest(k=10, mode="vector"))
    plan = _explain(store, pg_search._vector_query(store, LayerName.BASE, DIM, q, 20, True,
                                                   96, kinds, args))
    assert f"Index Scan using {pg_search.index_name(DIM, True, store.project)}" in plan
    approx = _search(store, q)
    exact = _search(store, q, exact=True)
    assert all(a for _, a in approx) and not any(a for _, a in exact)
    assert [i for i, _ in approx] == [i for i, _ in exact]  # a 400-node graph at breadth 96


def test_hidden_ids_are_read_through_the_events_index(store: PgStore) -> None:
    """Without ``kind LIKE 'meta.%'`` the planner could not use chunks_events and read the
    whole table on every search (seq scans off: only a usable index avoids one)."""
    plan = _explain(store, pg_search._hidden_query(store, [LayerName.BASE]),
                    "SET enable_seqscan = off")
    assert "chunks_events" in plan and "Seq Scan" not in plan


def test_a_forget_from_another_connection_hides_the_chunk_at_once(
        store: PgStore, pg_url: str) -> None:
    q = _unit(1, 3)[0]
    first = _search(store, q)[0][0]
    with PgStore(pg_url) as other:
        other.append(LayerName.LOCAL, [NewChunk(FORGET, f"forget {first}", "human", 1.0,
                                                sources=(first,))],
                     np.zeros((1, DIM), dtype=np.float32), profile=PROFILE)
    assert first not in [i for i, _ in _search(store, q)]


def _event_rows(store: PgStore) -> list[tuple[str, int | None]]:
    """What the hidden-ids statement would read now: (layer, event id) per row."""
    query = pg_search._hidden_query(store, list(LayerName))
    with store.cursor() as cur:
        cur.execute(query[0], query[1])
        return [(str(r[0]), r[1]) for r in cur.fetchall()]


def _note(store: PgStore, kind: str, text: str, sources: tuple[int, ...] = ()) -> None:
    store.append(LayerName.LOCAL, [NewChunk(kind, text, "human", 1.0, sources=sources)],
                 np.zeros((1, DIM), dtype=np.float32), profile=PROFILE)


def test_a_search_reads_a_layers_events_again_only_when_they_changed(
        store: PgStore, pg_url: str) -> None:
    """The events are folded once per change of them (migration 0077's generation), not
    once per query: a plain note leaves the generation alone, an event from any
    connection moves it, and only the layer it changed is read again."""
    q = _unit(1, 3)[0]
    _note(store, "note", "a plain note")
    first, second = [i for i, _ in _search(store, q)][:2]
    assert _event_rows(store) == []  # every layer as the search read it
    _note(store, "note", "another plain note")
    assert _event_rows(store) == []
    with PgStore(pg_url) as other:
        _note(other, FORGET, f"forget {first}", (first,))
    rows = _event_rows(store)
    assert [layer for layer, _ in rows] == ["local"] and rows[0][1] is not None
    assert first not in [i for i, _ in _search(store, q)]
    assert _event_rows(store) == []
    with store.cursor() as cur:  # a statement that removes an event moves it too
        cur.execute("DELETE FROM chunks WHERE project = %s AND kind = %s",
                    (store.project, FORGET))
    assert [layer for layer, _ in _event_rows(store)] == ["local"]
    assert [i for i, _ in _search(store, q)][:2] == [first, second]


def test_after_a_write_a_search_reads_only_the_new_events(store: PgStore,
                                                          pg_url: str) -> None:
    """Migration 0078: once a layer was read, the next read after a write takes the events
    of transactions from that read's horizon on, not the layer's whole log; removing an
    event reads the layer whole again."""
    q = _unit(1, 3)[0]
    first, second, third = [i for i, _ in _search(store, q)][:3]
    for _ in range(5):
        _note(store, WRITE, event_content(actor="alice", event="write", layer="local"))
    _search(store, q)
    with PgStore(pg_url) as other:
        _note(other, FORGET, f"forget {first}", (first,))
    new = _event_rows(store)
    assert [(layer, i is not None) for layer, i in new] == [("local", True)]
    assert [i for i, _ in _search(store, q)][:2] == [second, third]
    assert _event_rows(store) == []
    with store.cursor() as cur:
        cur.execute("DELETE FROM chunks WHERE project = %s AND kind = %s",
                    (store.project, FORGET))
    assert len(_event_rows(store)) == 5  # the writes left: the layer whole
    assert [i for i, _ in _search(store, q)][:2] == [first, second]


def test_an_event_committed_after_a_search_began_is_read_next_time(store: PgStore,
                                                                   pg_url: str) -> None:
    """A writer's transaction that began before a search read the events and commits after
    it: the next search hides what its event hides, because a read starts at the oldest
    transaction still running at the last one, not after the newest event it saw."""
    q = _unit(1, 3)[0]
    first, second = [i for i, _ in _search(store, q)][:2]
    _note(store, "note", "a plain note")
    with psycopg.connect(parse_store_url(pg_url).conninfo) as conn, conn.transaction():
        conn.execute("SELECT pg_current_xact_id()")  # the writer's transaction begins
        _note(store, WRITE, event_content(actor="alice", event="write", layer="local"))
        assert first in [i for i, _ in _search(store, q)]  # a newer one, read now
        conn.execute(
            "INSERT INTO chunks (project, layer, id, kind, content, author, confidence, "
            "created_at_ms, sources, dim, lex_tf, lex_len) VALUES (%s, 'local', "
            "2147480000, %s, 'forget', 'human', 1, 0, %s, 0, '{}', 0)",
            (store.project, FORGET, psycopg.types.json.Jsonb([first])))
    assert [i for i, _ in _search(store, q)][:1] == [second]


def test_a_search_inside_a_write_that_rolls_back_keeps_nothing_of_it(store: PgStore) -> None:
    """A search inside a transaction sees its own uncommitted forget; after the rollback
    the next search reads the layer whole and the chunk is back."""
    q = _unit(1, 3)[0]
    _note(store, "note", "a plain note")  # the local layer, read once before the write
    first, second = [i for i, _ in _search(store, q)][:2]

    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), store.transaction():
        _note(store, FORGET, f"forget {first}", (first,))
        assert [i for i, _ in _search(store, q)][:1] == [second]
        raise Rollback
    assert [i for i, _ in _search(store, q)][:2] == [first, second]


def _uncounted(store: PgStore) -> list[tuple[Any, ...]]:
    """Each layer's uncounted columns beside what its rows say (both must agree)."""
    with store.cursor() as cur:
        cur.execute(
            "SELECT l.layer, l.uncounted_docs, l.uncounted_len, count(c.id), "
            "coalesce(sum(c.lex_len), 0) FROM layers l LEFT JOIN chunks c ON "
            "c.project = l.project AND c.layer = l.layer AND (c.kind LIKE 'meta.%%' OR "
            "c.kind LIKE 'memory.%%') WHERE l.project = %s GROUP BY l.layer, "
            "l.uncounted_docs, l.uncounted_len ORDER BY l.layer", (store.project,))
        return cur.fetchall()


def test_the_layers_keep_the_count_of_what_statistics_leave_out(store: PgStore) -> None:
    """Migration 0078: what a general search subtracts from a layer's statistics is kept
    by the triggers, through inserts of events, memories and notes, a change of kind and
    deletes, and a lexical search's scores follow the rows, not the log's size."""
    _note(store, "note", "topic3 notes beside the log")
    before = [(h.chunk.id, round(h.score, 6)) for h in store.search(
        SearchRequest(k=5, mode="lexical", text="topic3 notes"), None).hits]
    for i in range(3):
        _note(store, "meta.write", f"write {i} topic3 notes notes")
    _note(store, "memory.fact.alice", "topic3 notes remembered")
    after = [(h.chunk.id, round(h.score, 6)) for h in store.search(
        SearchRequest(k=5, mode="lexical", text="topic3 notes"), None).hits]
    assert after == before
    got = _uncounted(store)
    assert [r[0] for r in got if r[1]] == ["local"]
    assert all((r[1], r[2]) == (r[3], r[4]) for r in got), got
    assert next(r for r in got if r[0] == "local")[1] == 4
    with store.cursor() as cur:
        cur.execute("UPDATE chunks SET kind = 'note' WHERE project = %s AND kind = "
                    "'memory.fact.alice'", (store.project,))
        cur.execute("DELETE FROM chunks WHERE project = %s AND content = 'write 0 topic3 "
                    "notes notes'", (store.project,))
    got = _uncounted(store)
    assert all((r[1], r[2]) == (r[3], r[4]) for r in got), got
    assert next(r for r in got if r[0] == "local")[1] == 2


def _ef(store: PgStore) -> str:
    with store.cursor() as cur:
        cur.execute("SHOW hnsw.ef_search")
        row = cur.fetchone()
    assert row is not None
    return str(row[0])


def test_the_breadth_is_set_per_connection_and_not_kept_from_a_transaction(
        store: PgStore) -> None:
    store = PgStore(store.url, database=Database(store.url, size=1))  # one connection
    q = _unit(1, 4)[0]
    _search(store, q, ann_expansion=50)
    assert _ef(store) == "50"
    with store.transaction():
        _search(store, q, ann_expansion=70)
        assert _ef(store) == "70"
    assert _ef(store) == "50"  # SET LOCAL ended with the transaction
    _search(store, q, ann_expansion=70)
    assert _ef(store) == "70"  # so it is set again, for the session this time
    _search(store, q)
    assert _ef(store) == str(pg_search.breadth(SearchRequest(k=10), 20, ROWS))
    store.db.close()


def test_the_default_breadth_is_the_file_stores() -> None:
    request = SearchRequest(k=10, mode="vector")
    assert pg_search.breadth(request, 20, 100_000) == 96
    assert pg_search.breadth(request, 20, 1_000_000) == 256
    assert pg_search.breadth(request, 500, 100_000) == 500
    assert pg_search.breadth(SearchRequest(k=10, ann_expansion=4000), 20, 100) == 1000


def test_a_hit_reads_back_as_written(store: PgStore) -> None:
    """Candidates are fetched in binary; a ``real`` read so would be 0.699999988."""
    hit = store.search(SearchRequest(k=1, mode="vector"), _unit(1, 5)[0],
                       normalised=True).hits[0]
    assert hit.chunk.confidence == 0.7
    assert hit.chunk == store.chunk(LayerName.BASE, hit.chunk.id)


def _project(url: str, name: str, rows: int, seed: int, tmp: Path) -> PgStore:
    """A project of ``rows`` unit vectors pushed from a layer file of its own."""
    tmp.mkdir()
    chunks = [Chunk(i, "note", f"{name} note {i}", "human", 0.7, 1000 + i)
              for i in range(1, rows + 1)]
    (tmp / "AGENTS.db").write_bytes(encode_layer(
        chunks, _unit(rows, seed), dim=DIM, metadata={"v": 1, "embedding_profile": PROFILE}))
    s = PgStore(parse_store_url(url, name))
    push(s, LayerSet.from_directory(tmp))
    return s


def test_a_small_project_beside_a_large_one_walks_its_own_graph(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One shared graph, filtered after the walk, gave a project with a small share of the
    server's chunks too few of its own rows, and it fell back to exact scans; each
    project's partial index gives it its own walk."""
    monkeypatch.setattr(pg_search, "ANN_MIN_ROWS", 100)
    big = _project(pg_url, "big", 2000, 11, tmp_path / "big")
    small = _project(pg_url, "small", 150, 12, tmp_path / "small")
    try:
        with small.cursor() as cur:
            cur.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunks_hnsw%%'")
            names = {str(r[0]) for r in cur.fetchall()}
        assert names == {pg_search.index_name(DIM, True, "big"),
                         pg_search.index_name(DIM, True, "small")}
        for seed in range(20, 25):
            q = _unit(1, seed)[0]
            approx, exact = _search(small, q), _search(small, q, exact=True)
            assert all(a for _, a in approx), approx  # walked, never rescanned exactly
            assert len({i for i, _ in approx} & {i for i, _ in exact}) >= 8
            assert all(h.chunk.content.startswith("small ")
                       for h in small.search(SearchRequest(k=10, mode="vector"), q,
                                             normalised=True).hits)
        kinds, args = pg_search._kind_filter(SearchRequest(k=10, mode="vector"))
        # At 150 rows sorting the project's rows is cheaper than any walk, and the planner
        # says so; with sorts priced out, the project's own index is the walk it finds.
        plan = _explain(small, pg_search._vector_query(small, LayerName.BASE, DIM, q, 20,
                                                       True, 40, kinds, args),
                        "SET enable_sort = off")
        assert f"Index Scan using {pg_search.index_name(DIM, True, 'small')}" in plan, plan

        # The same two projects under one shared graph, as an earlier Sediment built it:
        # the small project's answers come back short and are scanned exactly instead.
        with big.cursor() as cur:
            for name in names:
                cur.execute(f"DROP INDEX {name}")
            cur.execute(f"CREATE INDEX {pg_search.index_name(DIM, True)} ON chunks USING "
                        f"hnsw ((embedding::vector({DIM})) vector_ip_ops) WHERE dim = {DIM}")
        with PgStore(parse_store_url(pg_url, "small")) as fresh:  # no remembered index
            shared = [_search(fresh, _unit(1, seed)[0], ann_expansion=40)
                      for seed in range(20, 25)]
            assert not any(a for hits in shared for _, a in hits)
            # A push building the project's own index is seen once the answer "none of
            # its own" is older than RECHECK_S, without a lookup per search until then.
            own = pg_search.ensure_vector_index(fresh, DIM)
            with fresh.cursor() as cur:
                cached = pg_search._indexes[fresh][(DIM, True)]
                assert pg_search._usable_index(fresh, cur, DIM, True) == cached[0] != own
                pg_search._indexes[fresh][(DIM, True)] = (cached[0], 0.0)  # RECHECK_S later
                assert pg_search._usable_index(fresh, cur, DIM, True) == own
    finally:
        big.close()
        small.close()


def test_a_search_after_the_first_sends_its_vector_query_in_the_first_trip(
        store: PgStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The layers' counts of the previous search plan the vector statements, which go out
    with the first trip's; a layer that appears since changes the plan, and the vector
    statements then take a trip of their own (and find the new layer's chunk)."""
    trips: list[int] = []
    pipeline = psycopg.Connection.pipeline

    def counted(self: psycopg.Connection[Any]) -> Any:
        trips.append(1)
        return pipeline(self)

    monkeypatch.setattr(psycopg.Connection, "pipeline", counted)
    q = _unit(1, 6)[0]
    request = SearchRequest(k=10, mode="hybrid", text="note about topic3")
    first = [h.chunk.id for h in store.search(request, q, normalised=True).hits]
    assert len(trips) == 2
    trips.clear()
    again = [h.chunk.id for h in store.search(request, q, normalised=True).hits]
    assert again == first and len(trips) == 1
    (new,) = store.append(LayerName.LOCAL, [NewChunk("note", "note about topic3", "human",
                                                     1.0)], q[None, :], profile=PROFILE)
    trips.clear()
    hits = store.search(request, q, normalised=True).hits
    assert hits[0].chunk.id == new and len(trips) == 2

"""BM25 postings in blocks (migration 0074, after the postings table of 0060): the blocks
always hold the chunks' analysed terms (after a push, run-time writes, a purge, a base
replaced, a project dropped, and when a loaded database is migrated), and the lexical side
reads them through the blocks' key, not the chunk rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from psycopg.types.json import Jsonb

from sediment.format import Chunk, encode_layer
from sediment.ops import run_search
from sediment.pg import PgStore, connect, migrate
from sediment.pg import search as pg_search
from sediment.pg.memory import _PURGE_LAYERED
from sediment.pg.store import lexical
from sediment.pg.transfer import push
from sediment.search import SearchRequest
from sediment.store import LayerName, LayerSet, NewChunk
from tests.pg.layers import DIM, EMBEDDER, build_layers

EXPANDED = ("SELECT c.project, c.layer, t.key, c.id, t.value::integer, c.lex_len, c.kind "
            "FROM chunks c, jsonb_each_text(c.lex_tf) t")
POSTINGS = ("SELECT b.project, b.layer, b.term, p.id, p.tf, p.len, b.kind "
            "FROM posting_blocks b, sediment_block_postings(b.data) p")


def _mirror(url: str) -> tuple[int, int, int]:
    """Rows of the expansion, rows only in it, rows only in the blocks."""
    with connect(url) as conn:
        total = conn.execute(f"SELECT count(*) FROM ({EXPANDED}) x").fetchone()
        missing = conn.execute(f"SELECT count(*) FROM ({EXPANDED} EXCEPT ALL {POSTINGS}) x"
                               ).fetchone()
        extra = conn.execute(f"SELECT count(*) FROM ({POSTINGS} EXCEPT ALL {EXPANDED}) x"
                             ).fetchone()
    assert total and missing and extra
    return int(total[0]), int(missing[0]), int(extra[0])  # type: ignore[call-overload]


def _lexical(store: PgStore, text: str) -> list[int]:
    request = SearchRequest(k=10, mode="lexical", text=text)
    return [h.chunk.id for h in run_search(store, request).hits]


def test_postings_mirror_the_chunks_through_every_write(pg_url: str, tmp_path: Path) -> None:
    src = build_layers(tmp_path)
    with PgStore(pg_url) as store:
        push(store, LayerSet.from_directory(src))
        total, missing, extra = _mirror(pg_url)
        assert total > 40 and (missing, extra) == (0, 0)
        new = store.append(LayerName.LOCAL, [NewChunk(
            "note", "Quokkas tune BM25 postings nightly.", "mcp", 0.5)],
            EMBEDDER.embed(["Quokkas tune BM25 postings nightly."]),
            profile=EMBEDDER.profile)
        assert _mirror(pg_url)[1:] == (0, 0)
        assert _lexical(store, "quokkas") == new

        texts = [f"Alice's wombat note {i} about quokkas" for i in range(6)]
        mine = store.append(LayerName.DELTA, [NewChunk("memory.fact.alice", t, "mcp", 0.5)
                                              for t in texts],
                            EMBEDDER.embed(texts), profile=EMBEDDER.profile)
        assert _mirror(pg_url)[1:] == (0, 0)
        with store.transaction(), store.cursor() as cur:
            cur.execute(_PURGE_LAYERED, {"project": "default", "ids": mine[:4],
                                         "kinds": ["memory.fact.alice"]})
            assert cur.fetchone() == (4,)
        assert _mirror(pg_url)[1:] == (0, 0)
        with connect(pg_url) as conn:
            left = conn.execute("SELECT p.id FROM posting_blocks b, sediment_block_postings("
                                "b.data) p WHERE b.kind = 'memory.fact.alice' AND "
                                "b.term = 'wombat'").fetchall()
        assert sorted(i for (i,) in left) == sorted(mine[4:])

        newer = tmp_path / "newer"
        newer.mkdir()
        text = "A recompiled base about wombats."
        (newer / "AGENTS.db").write_bytes(encode_layer(
            [Chunk(1, "canonical", text, "human", 1.0, 1, ())], EMBEDDER.embed([text]),
            dim=DIM, metadata={"v": 1, "embedding_profile": EMBEDDER.profile.to_dict()}))
        push(store, LayerSet.from_directory(newer), replace_base=True)
        assert _mirror(pg_url)[1:] == (0, 0)
        assert _lexical(store, "precedence") == []  # only the old base held it
        assert _lexical(store, "wombats") == [1]
    with connect(pg_url) as conn:
        conn.execute("DELETE FROM projects WHERE name = 'default'")
        conn.commit()
        left = conn.execute("SELECT count(*) FROM posting_blocks").fetchone()
    assert left == (0,)


def test_migrating_a_loaded_database_fills_its_postings(pg_empty_url: str) -> None:
    """Chunks written under schema 0052 (no postings) are searchable after ``migrate``."""
    with connect(pg_empty_url) as conn:
        migrate(conn, target=52)
        conn.execute("INSERT INTO projects (name) VALUES ('default')")
        conn.execute("INSERT INTO layers (project, layer) VALUES ('default', 'base')")
        for i, text in enumerate(["capybaras swim", "capybaras and capybaras graze",
                                  "otters swim"], 1):
            tf, length = lexical(text)
            conn.execute(
                "INSERT INTO chunks (project, layer, id, kind, content, author, confidence, "
                "created_at_ms, lex_tf, lex_len) VALUES ('default', 'base', %s, 'note', %s, "
                "'human', 1, 0, %s, %s)", (i, text, Jsonb(tf), length))
        conn.commit()
        migrate(conn)
    assert _mirror(pg_empty_url) == (6, 0, 0)  # (chunk, term) pairs
    with PgStore(pg_empty_url) as store:
        assert _lexical(store, "capybaras") == [2, 1]
        assert _lexical(store, "swim") in ([1, 3], [3, 1])


def test_migrating_a_database_at_0073_packs_its_postings_into_blocks(
        pg_empty_url: str) -> None:
    """0074 fills the blocks from the postings table (up to 512 postings a block, one kind
    each), drops that table, and search reads the blocks."""
    with connect(pg_empty_url) as conn:
        migrate(conn, target=73)
    chunks = [Chunk(i, "note" if i % 3 else "guide", f"lemur {i} about lemurs and topic{i % 5}",
                    "human", 0.7, 1000 + i) for i in range(1, 1201)]
    with connect(pg_empty_url) as conn:
        conn.execute("INSERT INTO projects (name) VALUES ('default')")
        conn.execute("INSERT INTO layers (project, layer, dim) VALUES ('default', 'base', %s)",
                     (DIM,))
        for c in chunks:
            tf, length = lexical(c.content)
            conn.execute(
                "INSERT INTO chunks (project, layer, id, kind, content, author, confidence, "
                "created_at_ms, lex_tf, lex_len) VALUES ('default', 'base', %s, %s, %s, "
                "'human', 1, 0, %s, %s)", (c.id, c.kind, c.content, Jsonb(tf), length))
        before = conn.execute("SELECT count(*) FROM postings").fetchone()
        conn.commit()
        assert before and before[0] > 2400
        migrate(conn)
        blocks = conn.execute("SELECT kind, length(data) / 12 FROM posting_blocks "
                              "WHERE term = 'lemur' ORDER BY 1, 2").fetchall()
        gone = conn.execute("SELECT to_regclass('postings')").fetchone()
    assert blocks == [("guide", 400), ("note", 288), ("note", 512)]
    assert gone == (None,)
    assert _mirror(pg_empty_url) == (before[0], 0, 0)
    with PgStore(pg_empty_url) as store:
        assert _lexical(store, "topic3 lemurs")[:3] == [3, 8, 13]


def test_the_lexical_side_reads_a_few_blocks_through_their_key(pg_url: str,
                                                               tmp_path: Path) -> None:
    """A term held by 1,100 chunks is three blocks (512 postings each at most), read
    through the blocks' key, never the chunk rows."""
    rows = 1100
    chunks = [Chunk(i, "note", f"note {i} about topic{i % 7} and shared words", "human",
                    0.7, 1000 + i) for i in range(1, rows + 1)]
    vecs = np.random.default_rng(1).standard_normal((rows, DIM)).astype(np.float32)
    (tmp_path / "AGENTS.db").write_bytes(encode_layer(
        chunks, vecs, dim=DIM,
        metadata={"v": 1, "embedding_profile": EMBEDDER.profile.to_dict()}))
    with PgStore(pg_url) as store:
        push(store, LayerSet.from_directory(tmp_path))
        lex = pg_search._Lexical(SearchRequest(k=10, mode="lexical", text="topic3 shared"))
        query = lex.blocks("default", [LayerName.BASE], *pg_search._kind_filter(
            SearchRequest(k=10, mode="lexical", text="x")))
        assert query is not None
        with store.cursor() as cur:
            cur.execute(query[0], query[1], binary=True)
            got = cur.fetchall()
            cur.execute("SET enable_seqscan = off")
            cur.execute(b"EXPLAIN " + query[0].as_bytes(cur), query[1])
            plan = "\n".join(str(r[0]) for r in cur.fetchall())
    assert sorted((t, len(d) // 12) for _, t, d in got) == [
        ("share", 76), ("share", 512), ("share", 512), ("topic3", 157)]
    assert "posting_blocks_pkey" in plan, plan
    assert "chunks" not in plan, plan


def test_block_bm25_is_the_file_stores_over_many_blocks_and_appends(
        pg_url: str, tmp_path: Path) -> None:
    """Terms held by more than one block (and by blocks of appended chunks beside the
    pushed ones) score as the file store scores the same chunks: same ids in the same
    order, scores within 1e-5."""
    rows = 1300
    words = ["otter", "badger", "heron", "marten", "vole", "shrew", "stoat"]
    chunks = [Chunk(i, "note", " ".join(words[j % 7] for j in range(i % 5, i % 5 + 1 + i % 4))
                    + f" item{i % 13}" + " otter" * (i % 2), "human", 0.7, 1000 + i)
              for i in range(1, rows + 1)]
    vecs = EMBEDDER.embed([c.content for c in chunks])
    (tmp_path / "AGENTS.db").write_bytes(encode_layer(
        chunks, vecs, dim=DIM,
        metadata={"v": 1, "embedding_profile": EMBEDDER.profile.to_dict()}))
    files = LayerSet.from_directory(tmp_path)
    extra = [f"otter heron note {i}" for i in range(40)]
    with PgStore(pg_url) as store:
        push(store, files)
        with connect(pg_url) as conn:
            held = conn.execute("SELECT count(*) FROM posting_blocks WHERE term = 'otter'"
                                ).fetchone()
        assert held == (2,)  # 650 + 260 postings
        for target in (store, files):
            for i in range(0, len(extra), 10):
                target.append(LayerName.LOCAL, [NewChunk("note", t, "mcp", 0.5)
                                                for t in extra[i:i + 10]],
                              EMBEDDER.embed(extra[i:i + 10]),
                              profile=EMBEDDER.profile.to_dict())
        for text in ("otter", "heron marten item3", "badger stoat vole otter"):
            request = SearchRequest(k=50, mode="lexical", text=text)
            a = [(h.chunk.content, h.layer, h.lexical_score)
                 for h in run_search(files, request).hits]
            b = [(h.chunk.content, h.layer, h.lexical_score)
                 for h in run_search(store, request).hits]
            assert [x[:2] for x in a] == [x[:2] for x in b], text
            assert np.allclose([x[2] for x in a], [x[2] for x in b], atol=1e-5), text

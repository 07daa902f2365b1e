"""BM25 postings (migration 0060): the table always mirrors the chunks' analysed terms (after
a push, run-time writes, a base replaced, a project dropped, and when a loaded database is
migrated), and the lexical side reads it through an index-only scan, not the chunk rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from psycopg.types.json import Jsonb

from sediment.format import Chunk, encode_layer
from sediment.pg import PgStore, connect, migrate
from sediment.pg import search as pg_search
from sediment.pg.store import lexical
from sediment.pg.transfer import push
from sediment.search import SearchRequest
from sediment.store import LayerName, LayerSet, NewChunk
from tests.pg.layers import DIM, EMBEDDER, build_layers

EXPANDED = ("SELECT c.project, c.layer, t.key, c.id, t.value::integer, c.lex_len, c.kind "
            "FROM chunks c, jsonb_each_text(c.lex_tf) t")
POSTINGS = "SELECT project, layer, term, id, tf, len, kind FROM postings"


def _mirror(url: str) -> tuple[int, int, int]:
    """Rows of the expansion, rows only in it, rows only in ``postings``."""
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
    return [h.chunk.id for h in store.search(request, None).hits]


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
        left = conn.execute("SELECT count(*) FROM postings").fetchone()
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


def test_the_lexical_side_is_an_index_only_scan_of_postings(pg_url: str,
                                                             tmp_path: Path) -> None:
    rows = 300
    chunks = [Chunk(i, "note", f"note {i} about topic{i % 7} and shared words", "human",
                    0.7, 1000 + i) for i in range(1, rows + 1)]
    vecs = np.random.default_rng(1).standard_normal((rows, DIM)).astype(np.float32)
    (tmp_path / "AGENTS.db").write_bytes(encode_layer(
        chunks, vecs, dim=DIM,
        metadata={"v": 1, "embedding_profile": EMBEDDER.profile.to_dict()}))
    with PgStore(pg_url) as store:
        push(store, LayerSet.from_directory(tmp_path))
        with connect(pg_url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE postings")
        lex = pg_search._Lexical(SearchRequest(k=10, mode="lexical", text="topic3 shared"))
        dfs = lex.query("default", [LayerName.BASE])
        assert dfs is not None
        with store.cursor() as cur:
            cur.execute("SELECT layer, n_docs, total_len, dim FROM layers")
            layer_rows = cur.fetchall()
            cur.execute(dfs[0], dfs[1])
            lex.load(layer_rows, cur.fetchall())
        assert len(lex.terms) == 2
        query = lex.top("default", LayerName.BASE, 20, *pg_search._kind_filter(
            SearchRequest(k=10, mode="lexical", text="x")))
        assert query is not None
        with store.cursor() as cur:
            cur.execute("SET enable_seqscan = off")
            cur.execute(b"EXPLAIN " + query[0].as_bytes(cur), query[1])
            plan = "\n".join(str(r[0]) for r in cur.fetchall())
    assert "Index Only Scan using postings_pkey" in plan, plan
    assert "chunks" not in plan, plan

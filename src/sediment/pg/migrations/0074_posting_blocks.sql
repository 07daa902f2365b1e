-- BM25 postings in blocks: per (project, layer, term, kind), up to 512 postings packed in
-- one bytea of 12-byte big-endian records (chunk id as u32, term count, chunk length), so
-- the lexical side of a search reads a common term's 200,000 postings as about 400 rows
-- and sums them in numpy as the file store does (sediment.pg.search), where the postings
-- table of 0060 made PostgreSQL read and hash-aggregate them one row at a time: at 1M
-- chunks that was most of a hybrid search. Blocks are written by the statement trigger
-- that keeps the lexicon (one or more new blocks per statement, never rewritten but by a
-- purge), dropped with their layer, and rewritten without the purged ids by
-- sediment_block_without. toast_tuple_target keeps a full block (6 kB) in its heap row,
-- uncompressed: no TOAST lookup or decompression per block read.
CREATE TABLE posting_blocks (
    project text NOT NULL,
    layer text NOT NULL,
    term text NOT NULL,
    kind text NOT NULL,
    block bigint GENERATED ALWAYS AS IDENTITY,
    data bytea NOT NULL,
    PRIMARY KEY (project, layer, term, kind, block)
) WITH (toast_tuple_target = 8160);
ALTER TABLE posting_blocks ALTER COLUMN data SET STORAGE EXTERNAL;

-- One posting as its record: the id's low four bytes (ids are u32), tf, length.
CREATE FUNCTION sediment_posting(id bigint, tf integer, len integer) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT substr(int8send(id), 5) || int4send(tf) || int4send(len)
$$;

-- The postings of one block, as rows (for a purge and for reading blocks in SQL).
CREATE FUNCTION sediment_block_postings(data bytea)
RETURNS TABLE (id bigint, tf integer, len integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ('x' || encode(substr(data, i * 12 + 1, 4), 'hex'))::bit(32)::bigint
               & 4294967295,
           ('x' || encode(substr(data, i * 12 + 5, 4), 'hex'))::bit(32)::integer,
           ('x' || encode(substr(data, i * 12 + 9, 4), 'hex'))::bit(32)::integer
    FROM generate_series(0, length(data) / 12 - 1) AS i
$$;

-- A block without the postings of ``ids`` (empty when none is left).
CREATE FUNCTION sediment_block_without(data bytea, ids bigint[]) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(string_agg(sediment_posting(p.id, p.tf, p.len), ''::bytea ORDER BY p.id),
                    ''::bytea)
    FROM sediment_block_postings(data) AS p
    WHERE p.id <> ALL(ids)
$$;

SET LOCAL work_mem = '256MB';
INSERT INTO posting_blocks (project, layer, term, kind, data)
SELECT project, layer, term, kind, string_agg(sediment_posting(id, tf, len), ''::bytea ORDER BY id)
FROM (SELECT project, layer, term, kind, id, tf, len,
             (row_number() OVER (PARTITION BY project, layer, term, kind ORDER BY id) - 1)
                 / 512 AS part
      FROM postings) AS p
GROUP BY project, layer, term, kind, part;

CREATE OR REPLACE FUNCTION sediment_count_terms() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE layers AS l SET n_docs = l.n_docs + s.n, total_len = l.total_len + s.len
    FROM (SELECT project, layer, count(*) AS n, coalesce(sum(lex_len), 0) AS len
          FROM new_rows GROUP BY project, layer) AS s
    WHERE l.project = s.project AND l.layer = s.layer;
    INSERT INTO lexicon AS x (project, layer, term, df)
    SELECT n.project, n.layer, t.term, count(*)
    FROM new_rows AS n, jsonb_object_keys(n.lex_tf) AS t (term)
    GROUP BY n.project, n.layer, t.term
    ORDER BY n.project, n.layer, t.term
    ON CONFLICT (project, layer, term) DO UPDATE SET df = x.df + excluded.df;
    INSERT INTO posting_blocks (project, layer, term, kind, data)
    SELECT project, layer, term, kind,
           string_agg(sediment_posting(id, tf, len), ''::bytea ORDER BY id)
    FROM (SELECT n.project, n.layer, t.key AS term, n.kind, n.id, t.value::integer AS tf,
                 n.lex_len AS len,
                 (row_number() OVER (PARTITION BY n.project, n.layer, t.key, n.kind
                                     ORDER BY n.id) - 1) / 512 AS part
          FROM new_rows AS n, jsonb_each_text(n.lex_tf) AS t) AS p
    GROUP BY project, layer, term, kind, part;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION sediment_drop_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM posting_blocks AS p USING old_rows AS o
    WHERE p.project = o.project AND p.layer = o.layer;
    RETURN NULL;
END $$;

DROP TABLE postings;

ANALYZE posting_blocks;

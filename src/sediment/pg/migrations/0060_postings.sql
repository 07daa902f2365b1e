-- BM25 postings: one row per (chunk, analysed term) with the term's count, the chunk's
-- length and its kind, so the lexical side of a search reads an index of small tuples
-- instead of the wide chunk rows (text, vector, JSON) of every chunk holding a query term:
-- at 1M chunks that heap read made hybrid search 16 times slower than the file store's.
-- The primary key covers every column a BM25 query reads, so the query is an index-only
-- scan once the table is vacuumed. Kept by the same statement trigger as the lexicon, and
-- emptied with its layer (no foreign key: a check per posting would slow a bulk load).
CREATE TABLE postings (
    project text NOT NULL,
    layer text NOT NULL,
    term text NOT NULL,
    id bigint NOT NULL,
    tf integer NOT NULL CHECK (tf > 0),
    len integer NOT NULL,
    kind text NOT NULL,
    PRIMARY KEY (project, layer, term, id) INCLUDE (tf, len, kind)
);

INSERT INTO postings (project, layer, term, id, tf, len, kind)
SELECT c.project, c.layer, t.key, c.id, t.value::integer, c.lex_len, c.kind
FROM chunks AS c, jsonb_each_text(c.lex_tf) AS t
ORDER BY 1, 2, 3, 4;

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
    INSERT INTO postings (project, layer, term, id, tf, len, kind)
    SELECT n.project, n.layer, t.key, n.id, t.value::integer, n.lex_len, n.kind
    FROM new_rows AS n, jsonb_each_text(n.lex_tf) AS t;
    RETURN NULL;
END $$;

CREATE FUNCTION sediment_drop_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM postings AS p USING old_rows AS o
    WHERE p.project = o.project AND p.layer = o.layer;
    RETURN NULL;
END $$;

CREATE TRIGGER layers_drop_postings AFTER DELETE ON layers
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION sediment_drop_postings();

-- The lexical side read chunks through this index; nothing does now, and keeping a GIN
-- index current is most of a bulk load's cost after the vectors.
DROP INDEX chunks_terms;

ANALYZE postings;

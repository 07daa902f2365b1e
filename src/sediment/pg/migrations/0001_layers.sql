-- The layered chunk store: projects, their four layers, chunks with vectors and the
-- lexical data Sediment's own BM25 needs. Events (proposals, decisions, supersessions,
-- forgets) are meta.* chunks as in the layer files, so a fold reads them the same way.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE projects (
    name text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Ids written at run time, for every project: the upper half of the u32 space, as the
-- file store's writers use (store/ids.py); a sequence never hands out a value twice,
-- even when the transaction that took it rolls back.
CREATE SEQUENCE chunk_ids AS bigint MINVALUE 1 MAXVALUE 4294967295
    START WITH 2147483648 NO CYCLE;

-- One row per layer of a project: the vector schema and the layer file's own metadata
-- (embedding profile, id ranges, ...), and the counts BM25 needs (kept by a trigger).
CREATE TABLE layers (
    project text NOT NULL REFERENCES projects (name) ON DELETE CASCADE,
    layer text NOT NULL CHECK (layer IN ('base', 'user', 'delta', 'local')),
    dim integer NOT NULL DEFAULT 0 CHECK (dim >= 0),
    element_type text NOT NULL DEFAULT 'f32' CHECK (element_type IN ('f32', 'i8')),
    quant_scale double precision,
    metadata jsonb,
    n_docs bigint NOT NULL DEFAULT 0,
    total_len bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (project, layer)
);

CREATE TABLE chunks (
    project text NOT NULL,
    layer text NOT NULL,
    id bigint NOT NULL CHECK (id BETWEEN 1 AND 4294967295),
    row_no bigint GENERATED ALWAYS AS IDENTITY,
    kind text NOT NULL,
    content text NOT NULL,
    author text NOT NULL,
    confidence real NOT NULL,
    created_at_ms bigint NOT NULL,
    sources jsonb NOT NULL DEFAULT '[]'::jsonb,
    metadata jsonb,
    dim integer NOT NULL DEFAULT 0,
    embedding vector,
    lex_tf jsonb NOT NULL DEFAULT '{}'::jsonb,
    lex_len integer NOT NULL DEFAULT 0,
    PRIMARY KEY (project, layer, id),
    FOREIGN KEY (project, layer) REFERENCES layers (project, layer) ON DELETE CASCADE
);
CREATE INDEX chunks_by_id ON chunks (project, id);
CREATE INDEX chunks_events ON chunks (project, layer) WHERE kind LIKE 'meta.%';
CREATE INDEX chunks_terms ON chunks USING gin (lex_tf);

-- Document frequency of each analysed term per layer (BM25's statistics are summed over
-- the layers searched together, as in the file store).
CREATE TABLE lexicon (
    project text NOT NULL,
    layer text NOT NULL,
    term text NOT NULL,
    df bigint NOT NULL,
    PRIMARY KEY (project, layer, term),
    FOREIGN KEY (project, layer) REFERENCES layers (project, layer) ON DELETE CASCADE
);

CREATE FUNCTION sediment_count_terms() RETURNS trigger LANGUAGE plpgsql AS $$
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
    RETURN NULL;
END $$;

CREATE TRIGGER chunks_count_terms AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION sediment_count_terms();

-- Agent memories and their events (sediment.pg.memory). ``store`` is the id prefix the
-- tools show: 'u' rows are an actor's own memories and follow them across projects
-- (project ''), 'p' rows belong to one project. ``layer`` is where the file store keeps
-- the same row: 'user' for the actor's own, 'local' (project scope), 'user' again for a
-- project's global memories, 'delta' for proposals, 'usage' for the use counts of 'u'
-- rows. ``owner`` is the actor the row belongs to; ``shared`` rows (global memories and
-- the events about them) are read by every actor of the project; every query binds the
-- actor, so no route reads another actor's unshared rows. Ids come from chunk_ids.
CREATE TABLE memories (
    project text NOT NULL,
    store text NOT NULL CHECK (store IN ('u', 'p')),
    id bigint NOT NULL,
    layer text NOT NULL CHECK (layer IN ('user', 'local', 'delta', 'base', 'usage')),
    owner text NOT NULL,
    shared boolean NOT NULL DEFAULT false,
    is_event boolean NOT NULL,
    kind text NOT NULL,
    content text NOT NULL,
    author text NOT NULL,
    confidence real NOT NULL,
    created_at_ms bigint NOT NULL,
    sources jsonb NOT NULL DEFAULT '[]'::jsonb,
    data jsonb,
    embedding vector,
    hidden boolean NOT NULL DEFAULT false,
    PRIMARY KEY (project, store, id)
);
CREATE INDEX memories_owned ON memories (project, store, owner) WHERE NOT is_event;
CREATE INDEX memories_events ON memories (project, store, owner) WHERE is_event;
CREATE INDEX memories_lexical ON memories
    USING gin (to_tsvector('simple', content)) WHERE NOT is_event;

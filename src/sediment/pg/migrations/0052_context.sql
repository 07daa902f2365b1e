-- Progressive context (sediment.pg.context): items (kind context.<type>, one vector each)
-- and their events, per project and actor. ``archive`` is the day (YYYY-MM-DD) an item and
-- its own events were archived, NULL while active. ``subjects`` holds the integer sources,
-- so archiving finds an item's events by index. Every query binds the actor.
CREATE TABLE context_rows (
    project text NOT NULL,
    id bigint NOT NULL,
    actor text NOT NULL,
    is_event boolean NOT NULL,
    kind text NOT NULL,
    content text NOT NULL,
    author text NOT NULL,
    created_at_ms bigint NOT NULL,
    sources jsonb NOT NULL DEFAULT '[]'::jsonb,
    subjects bigint[] NOT NULL DEFAULT '{}',
    data jsonb,
    embedding vector,
    archive text CHECK (archive ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
    PRIMARY KEY (project, id)
);
CREATE INDEX context_by_actor ON context_rows (project, actor, is_event);
CREATE INDEX context_subjects ON context_rows USING gin (subjects);

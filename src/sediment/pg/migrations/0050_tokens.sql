-- Bearer tokens of the team server (the file token model's records, in a table): only a
-- salted HMAC-SHA256 of each token is kept; the token itself is shown once, at creation.
CREATE TABLE tokens (
    id text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{8}$'),
    actor text NOT NULL CHECK (actor ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$'),
    role text NOT NULL CHECK (role IN ('reader', 'writer', 'reviewer', 'admin')),
    salt bytea NOT NULL,
    hmac text NOT NULL,
    created_at_ms bigint NOT NULL,
    created_by text NOT NULL DEFAULT ''
);

-- A counter per subject (memories; one project's context) that every write bumps in its
-- own transaction, so a reader caching a fold knows when anything it read has changed.
CREATE TABLE revisions (
    subject text PRIMARY KEY,
    rev bigint NOT NULL DEFAULT 0
);

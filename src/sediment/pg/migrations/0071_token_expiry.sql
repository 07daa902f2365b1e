-- A team server's token can end by itself, as a token file's can: `sediment token create
-- --expires 30d --store URL`. NULL: until revoked (every token made before this migration).
ALTER TABLE tokens ADD COLUMN expires_at_ms bigint;

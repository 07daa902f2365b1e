-- A team server's token can be scoped to one project: `sediment token create --project P
-- --store URL`. A server of another project refuses it as an unknown token. NULL: every
-- project of the database (every token made before this migration).
ALTER TABLE tokens ADD COLUMN project text;

-- Two things a search read from every event of the layers it searched, each time a layer's
-- events changed (0077), are now kept so that it reads only what is new.
--
-- 1. Each layer's count and total length of the rows a general search leaves out of its
--    BM25 statistics (events, meta.*, and memories, memory.*: sediment.store.rules
--    .counted_in_statistics), kept by the row triggers of 0077, which now fire for
--    memories too; a search read them by counting those rows on every query.
-- 2. Which ids the events hide. A team server logs an event for every write, so after any
--    write the next search read the whole log of the layer again (400 ms at 10,000
--    events). Each event row now records the transaction that wrote it (event_xid), and a
--    search reads only the events of transactions at or after the oldest one still
--    running when it last read (pg_snapshot_xmin): a transaction before that had ended,
--    so its events were read then if it committed. Events only accumulate; a statement
--    that removes or changes one moves events_cut, and the next search reads the layer
--    whole (sediment.pg.search). Events written before this migration have no
--    event_xid: the first read after it is whole.
ALTER TABLE layers ADD COLUMN uncounted_docs bigint NOT NULL DEFAULT 0,
                   ADD COLUMN uncounted_len bigint NOT NULL DEFAULT 0,
                   ADD COLUMN events_cut bigint NOT NULL
                       DEFAULT nextval('layer_event_generations');
ALTER TABLE chunks ADD COLUMN event_xid xid8;

UPDATE layers AS l SET uncounted_docs = s.n, uncounted_len = s.len
FROM (SELECT project, layer, count(*) AS n, coalesce(sum(lex_len), 0) AS len FROM chunks
      WHERE kind LIKE 'meta.%' OR kind LIKE 'memory.%' GROUP BY project, layer) AS s
WHERE l.project = s.project AND l.layer = s.layer;

CREATE OR REPLACE FUNCTION sediment_layer_events_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'DELETE' AND (NEW.kind LIKE 'meta.%' OR NEW.kind LIKE 'memory.%') THEN
        UPDATE layers SET
            events_gen = CASE WHEN NEW.kind LIKE 'meta.%'
                              THEN nextval('layer_event_generations') ELSE events_gen END,
            uncounted_docs = uncounted_docs + 1,
            uncounted_len = uncounted_len + coalesce(NEW.lex_len, 0)
        WHERE project = NEW.project AND layer = NEW.layer;
    END IF;
    IF TG_OP <> 'INSERT' AND (OLD.kind LIKE 'meta.%' OR OLD.kind LIKE 'memory.%') THEN
        UPDATE layers SET
            events_gen = CASE WHEN OLD.kind LIKE 'meta.%'
                              THEN nextval('layer_event_generations') ELSE events_gen END,
            events_cut = CASE WHEN OLD.kind LIKE 'meta.%'
                              THEN nextval('layer_event_generations') ELSE events_cut END,
            uncounted_docs = uncounted_docs - 1,
            uncounted_len = uncounted_len - coalesce(OLD.lex_len, 0)
        WHERE project = OLD.project AND layer = OLD.layer;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION sediment_event_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.event_xid := pg_current_xact_id();
    RETURN NEW;
END
$$;

DROP TRIGGER chunks_events_inserted ON chunks;
DROP TRIGGER chunks_events_updated ON chunks;
DROP TRIGGER chunks_events_deleted ON chunks;
CREATE TRIGGER chunks_event_written BEFORE INSERT OR UPDATE ON chunks FOR EACH ROW
    WHEN (NEW.kind LIKE 'meta.%')
    EXECUTE FUNCTION sediment_event_written();
CREATE TRIGGER chunks_uncounted_inserted AFTER INSERT ON chunks FOR EACH ROW
    WHEN (NEW.kind LIKE 'meta.%' OR NEW.kind LIKE 'memory.%')
    EXECUTE FUNCTION sediment_layer_events_changed();
CREATE TRIGGER chunks_uncounted_updated AFTER UPDATE ON chunks FOR EACH ROW
    WHEN (OLD.kind LIKE 'meta.%' OR OLD.kind LIKE 'memory.%'
          OR NEW.kind LIKE 'meta.%' OR NEW.kind LIKE 'memory.%')
    EXECUTE FUNCTION sediment_layer_events_changed();
CREATE TRIGGER chunks_uncounted_deleted AFTER DELETE ON chunks FOR EACH ROW
    WHEN (OLD.kind LIKE 'meta.%' OR OLD.kind LIKE 'memory.%')
    EXECUTE FUNCTION sediment_layer_events_changed();

-- The events' partial index, by writer too: a search reads a layer's new events as a
-- range of it.
DROP INDEX chunks_events;
CREATE INDEX chunks_events ON chunks (project, layer, event_xid) WHERE kind LIKE 'meta.%';

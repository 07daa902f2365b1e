-- Each layer's count and total length of the rows a general search leaves out of its BM25
-- statistics (events, meta.*, and memories, memory.*: sediment.store.rules
-- .counted_in_statistics). A search subtracted them from n_docs and total_len by counting
-- those rows on every query, which cost more as a team server's log of writes grew; the
-- row triggers that move the events generation (0077) now keep the two numbers, for
-- memories too, so a search reads them with the layer's other counts.
ALTER TABLE layers ADD COLUMN uncounted_docs bigint NOT NULL DEFAULT 0,
                   ADD COLUMN uncounted_len bigint NOT NULL DEFAULT 0;

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
            uncounted_docs = uncounted_docs - 1,
            uncounted_len = uncounted_len - coalesce(OLD.lex_len, 0)
        WHERE project = OLD.project AND layer = OLD.layer;
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER chunks_events_inserted ON chunks;
DROP TRIGGER chunks_events_updated ON chunks;
DROP TRIGGER chunks_events_deleted ON chunks;
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

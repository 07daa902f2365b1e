-- Each layer's events generation: a value that changes whenever a row adds, changes or
-- removes an event (meta.*) of the layer. A search reads which ids events hide
-- (superseded, forgotten, another actor's local notes) from every event of the layers it
-- searches; a server remembers that per layer and generation and reads the events again
-- only when the generation moved (sediment.pg.search), as the file store remembers it per
-- file version. Values come from one sequence, so no two states of any layer (a layer
-- removed and made again included) share one. Row triggers with a WHEN clause fire for
-- events alone, so a push of a large base pays nothing for them.
CREATE SEQUENCE layer_event_generations;
ALTER TABLE layers ADD COLUMN events_gen bigint NOT NULL
    DEFAULT nextval('layer_event_generations');

CREATE FUNCTION sediment_layer_events_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'DELETE' THEN
        UPDATE layers SET events_gen = nextval('layer_event_generations')
        WHERE project = NEW.project AND layer = NEW.layer;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        UPDATE layers SET events_gen = nextval('layer_event_generations')
        WHERE project = OLD.project AND layer = OLD.layer;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER chunks_events_inserted AFTER INSERT ON chunks FOR EACH ROW
    WHEN (NEW.kind LIKE 'meta.%')
    EXECUTE FUNCTION sediment_layer_events_changed();
CREATE TRIGGER chunks_events_updated AFTER UPDATE ON chunks FOR EACH ROW
    WHEN (OLD.kind LIKE 'meta.%' OR NEW.kind LIKE 'meta.%')
    EXECUTE FUNCTION sediment_layer_events_changed();
CREATE TRIGGER chunks_events_deleted AFTER DELETE ON chunks FOR EACH ROW
    WHEN (OLD.kind LIKE 'meta.%')
    EXECUTE FUNCTION sediment_layer_events_changed();

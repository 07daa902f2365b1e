-- The id sequence ends with the project range of written ids (sediment.store.ids,
-- PROJECT_IDS: 2147483648 .. 3221225471). Every row of a server takes its id from it:
-- layer chunks, memory rows and context rows, the last two renumbered into the files'
-- context and actor ranges by a pull; the layers are pulled as they are, so an id past
-- the range would land in a context store's range on the files. nextval past the end is
-- then an error, which sediment.pg.database.next_ids reports naming the range. A sequence
-- already past it (only a push of hand-made ids could move it there) keeps its old end
-- here (lowering it below the current value is refused) and next_ids refuses its ids.
DO $$
BEGIN
    IF (SELECT last_value FROM chunk_ids) <= 3221225471 THEN
        ALTER SEQUENCE chunk_ids MAXVALUE 3221225471;
    END IF;
END
$$;

-- A general search's BM25 statistics leave out memories and their events (meta.memory*),
-- as the file engine does (sediment.store.rules.counted_in_statistics). This index lets
-- the search read those events alone, at a cost that follows the number of memories.
CREATE INDEX chunks_memory_events ON chunks (project, layer) WHERE kind LIKE 'meta.memory%';

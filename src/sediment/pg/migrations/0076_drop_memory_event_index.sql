-- 0072's index served a search that left memory events (meta.memory*) out of its BM25
-- statistics. A search now leaves every event (meta.*) out, through chunks_events, so no
-- query's predicate implies meta.memory% alone any more, and the index was only a cost
-- on every write of a memory event.
DROP INDEX IF EXISTS chunks_memory_events;

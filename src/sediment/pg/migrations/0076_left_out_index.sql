-- A general search's BM25 statistics leave out every event (meta.*) and every memory
-- (memory.*), as the file engine does (sediment.store.rules.counted_in_statistics): the
-- team server keeps an actor's memories and the events about them in a table of its own,
-- the layer files in the local layer, so counting any of them ranked the same query
-- differently on the two. A search subtracts their count and length, read from this index
-- alone (index-only), and their terms' frequencies from the posting blocks. It replaces
-- 0072's index of memory events, which this one covers. Nothing stored changes: the
-- statistics are taken at query time.
CREATE INDEX chunks_left_out ON chunks (project, layer) INCLUDE (lex_len)
    WHERE (kind LIKE 'memory.%' OR kind LIKE 'meta.%');
DROP INDEX IF EXISTS chunks_memory_events;

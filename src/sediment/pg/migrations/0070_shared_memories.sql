-- A project's global memories and memory proposals move from ``memories`` into the
-- project's layers (``chunks``), where the layer files keep them too: global ones in the
-- user layer (base after a compaction), proposals with their events in the delta layer.
-- Then the review flow (proposals list, accept, reject, the web queue) reads and decides a
-- memory proposal as it does any other, by one fold over the delta layer's events, and an
-- id is in one table only. ``memories`` keeps the rows bound to one actor: their own
-- ('u') memories, project-scope ('local') ones, and use counts.
--
-- The rows themselves are moved by this migration's Python step
-- (sediment.pg.backfill.move_shared_memories), which analyses their text for BM25 as every
-- chunk written is; here the layers they need are made and the index that lists a
-- project's memory chunks.
INSERT INTO projects (name)
SELECT DISTINCT project FROM memories
WHERE store = 'p' AND layer IN ('user', 'base', 'delta')
ON CONFLICT DO NOTHING;

INSERT INTO layers (project, layer, dim, element_type, metadata)
SELECT m.project, m.layer,
       coalesce((SELECT max(l.dim) FROM layers AS l WHERE l.project = m.project),
                max(vector_dims(m.embedding)), 0),
       'f32', '{"v": 1, "tool_name": "sediment"}'::jsonb
FROM memories AS m
WHERE m.store = 'p' AND m.layer IN ('user', 'base', 'delta')
GROUP BY m.project, m.layer
ON CONFLICT (project, layer) DO NOTHING;

CREATE INDEX chunks_memories ON chunks (project, layer, kind) WHERE kind LIKE 'memory.%';

"""The one rule for which values inside an event are chunk ids (``sediment.store.refs``):
the merge driver and both pushes (memories, context) renumber through it."""

from __future__ import annotations

import json

from sediment.format import Chunk
from sediment.store.events import SUPERSEDE, event_content
from sediment.store.refs import renumbered, rewrite_ids, rewrite_sources

OLD, NEW = 2_147_483_650, 2_147_483_990


def moved(cid: int) -> int:
    return NEW if cid == OLD else cid


def test_every_kind_of_reference_is_rewritten() -> None:
    data = {"event": "store", "memory_id": OLD, "old_id": OLD, "new_id": 7, "item": OLD,
            "restores": OLD, "summary_of": [OLD, 5], "related_to": [str(OLD), "kcp:unit"],
            "chunk_ids": [OLD], "uses": {str(OLD): 3, "9": 1},
            "metadata": {"iteration_item": OLD, "note": OLD}}
    got = rewrite_ids(data, moved)
    assert got == {"event": "store", "memory_id": NEW, "old_id": NEW, "new_id": 7,
                   "item": NEW, "restores": NEW, "summary_of": [NEW, 5],
                   "related_to": [str(NEW), "kcp:unit"], "chunk_ids": [NEW],
                   "uses": {str(NEW): 3, "9": 1},
                   "metadata": {"iteration_item": NEW, "note": OLD}}
    assert data["item"] == OLD  # the input is not changed in place


def test_names_an_agent_chose_are_never_taken_for_ids() -> None:
    data = {"run_id": str(OLD), "session_id": str(OLD), "content": str(OLD), "flag": True}
    assert rewrite_ids(data, moved) == data


def test_booleans_are_not_ids() -> None:
    assert rewrite_ids({"item": True}, lambda _: 0) == {"item": True}
    assert rewrite_sources((True, OLD, "doc.md:3"), moved) == (True, NEW, "doc.md:3")


def test_renumbered_moves_chunks_in_id_order_and_their_references_with_them() -> None:
    """A pull's renumbering: ids in order, sources and event JSON among the chunks follow,
    references to chunks outside (a project's, a file:line) and a memory's own text stay."""
    memory = Chunk(OLD + 2, "memory.fact.bob", '{"memory_id": 2147483650}', "mcp", 0.7, 1,
                   (OLD, "a.md:3", 12))
    item = Chunk(OLD, "context.task", "Move the tables.", "mcp", 1.0, 1)
    event = Chunk(OLD + 3, SUPERSEDE, event_content(old_id=OLD, new_id=OLD + 2, reason="x"),
                  "mcp", 1.0, 2, (OLD, OLD + 2))
    got = renumbered([memory, item, event], range(9_000, 9_003))
    assert [c.id for c in got] == [9_001, 9_000, 9_002]
    assert got[0].content == memory.content and got[0].sources == (9_000, "a.md:3", 12)
    assert got[2].sources == (9_000, 9_001)
    assert json.loads(got[2].content) == {"old_id": 9_000, "new_id": 9_001, "reason": "x"}

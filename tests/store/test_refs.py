"""The one rule for which values inside an event are chunk ids (``sediment.store.refs``):
the merge driver and both pushes (memories, context) renumber through it."""

from __future__ import annotations

from sediment.store.refs import rewrite_ids, rewrite_sources

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

"""The fold of memory events, and the cache that applies only new events to it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.memory import MemoryService, MemoryStore
from sediment.memory.events import CONTEXT, SAVE, USE, FoldCache, StoredEvent, fold
from sediment.store.events import FORGET, SUPERSEDE


def _event(i: int, kind: str, a: int, b: int, ms: int) -> StoredEvent:
    data: dict[str, object] = {
        SAVE: {"event": "save", "memory_id": a, "actor": "al", "context": f"c{b}",
               "related_to": [str(b)]},
        SUPERSEDE: {"event": "supersede", "old_id": a, "new_id": b, "reason": "dedup"},
        FORGET: {"event": "forget", "context_id": a},
        USE: {"event": "use", "actor": "al", "uses": {str(a): [b + 1, ms]}},
        CONTEXT: {"event": "context", "actor": "al", "name": f"c{a}",
                  "description": f"d{b}", "priority": b / 10},
    }[kind]
    return StoredEvent("u", "user", 1000 + i, kind, ms, data, (a, b))


events_st = st.lists(st.tuples(st.sampled_from([SAVE, SUPERSEDE, FORGET, USE, CONTEXT]),
                               st.integers(1, 6), st.integers(1, 6), st.integers(0, 50)),
                     max_size=40)


@settings(max_examples=150, deadline=None)
@given(events_st, st.integers(0, 40))
def test_applying_new_events_equals_folding_all(raw: list[tuple[str, int, int, int]],
                                                cut: int) -> None:
    """Events arrive in two batches (the second after the first, as appends are): the
    cache's fold equals a fold of all of them, and the first fold is left untouched."""
    events = sorted((_event(i, *r[:3], ms=r[3]) for i, r in enumerate(raw)),
                    key=lambda e: (e.created_at_ms, e.id))
    cache = FoldCache()
    first = cache.update(1, events[:cut])
    before = repr(first)
    both = cache.update(2, events)
    assert both == fold(events)
    assert repr(first) == before
    assert cache.update(2, events) is both


def test_a_vanished_or_earlier_event_refolds_from_scratch() -> None:
    a = _event(0, SUPERSEDE, 1, 2, 10)
    b = _event(1, FORGET, 2, 0, 20)
    late = _event(2, SAVE, 3, 1, 5)
    cache = FoldCache()
    cache.update(1, [a, b])
    assert cache.update(2, [b]) == fold([b])  # a was compacted away: not superseded now
    assert cache.update(3, [b, late]) == fold([b, late])


def test_another_service_sees_each_change(memory_store: MemoryStore,
                                          embedder: object) -> None:
    """Two services on one store: each change by one is in the other's next answer (the
    cached fold follows the store's version)."""
    one = MemoryService(memory_store, embedder)  # type: ignore[arg-type]
    two = MemoryService(memory_store, embedder)  # type: ignore[arg-type]
    first = one.save("alice", "The staging database is called stg-main", "fact")
    assert two.list_memories("alice")["total"] == 1
    two.update("alice", first["id"], {"content": "The staging database is called stg-two"})
    listed = one.list_memories("alice")["memories"]
    assert [m["content"] for m in listed] == ["The staging database is called stg-two"]
    one.delete("alice", listed[0]["id"])
    assert two.list_memories("alice")["total"] == 0

"""What one actor's store calls return about another actor's memories, on every backend:
nothing private, while global memories and their use counts are everyone's."""

from __future__ import annotations

from typing import Any

from sediment.memory import MemoryRef, MemoryService, MemoryStore, Scope


def _ref(saved: dict[str, Any]) -> MemoryRef:
    """The stored address of a saved memory (its ``id`` is the actor's handle)."""
    return MemoryRef("u" if saved["scope"] == "user" else "p", saved["chunk_id"])


def test_the_store_returns_nothing_private_of_another_actor(
        service: MemoryService, memory_store: MemoryStore) -> None:
    mine = [service.save("bob", "Bob's vault code is 4711", "fact"),
            service.save("bob", "Bob's service listens on 9000", "fact",
                         scope="project", context="ops"),
            service.save("bob", "Bob wants two reviewers", "convention", scope="global")]
    service.recall("bob", "vault code")
    service.flush()
    refs = [_ref(m) for m in mine]
    assert memory_store.memories("alice", tuple(Scope)) == []
    assert all(memory_store.get("alice", r) is None for r in refs)
    for scope in Scope:
        vec = service.embedder.embed(["vault code service reviewers"])[0]
        assert memory_store.search("alice", scope, "vault code", vec, ("fact", "convention"),
                                   10) == []
    assert {s.ref for s in memory_store.memories("bob", tuple(Scope))} == set(refs)


def test_purge_never_removes_another_actors_memories(service: MemoryService,
                                                     memory_store: MemoryStore) -> None:
    refs = [_ref(service.save("bob", text, "fact", scope=scope))
            for text, scope in (("Bob's vault code is 4711", "user"),
                                ("Bob's service listens on 9000", "project"))]
    assert memory_store.purge("alice", refs) == 0
    assert {s.ref for s in memory_store.memories("bob", tuple(Scope))} == set(refs)


def test_no_event_of_another_actor_is_returned(service: MemoryService,
                                              memory_store: MemoryStore) -> None:
    service.save("bob", "Bob's service listens on 9000", "fact", scope="project",
                 context="ops")
    service.set_context("bob", "ops", scope="project", description="bob's own")
    assert [e for e in memory_store.events("alice") if "bob" in str(e.data)] == []
    assert [e for e in memory_store.events("bob") if "bob" in str(e.data)] != []


def test_global_memories_and_their_uses_are_everyones(service: MemoryService) -> None:
    glob = service.save("rev", "Releases are cut on Mondays", "convention", scope="global",
                        human=True)
    assert glob["status"] == "created"
    for actor in ("alice", "bob", "bob"):
        got = service.recall(actor, "when are releases cut")
        assert [m["id"] for m in got["memories"]] == [glob["id"]]
    service.flush()
    fresh = MemoryService(service.store, service.embedder)
    shown = fresh.show("alice", glob["id"])
    assert shown["memory"]["use_count"] == 3
    assert [h["count"] for h in shown["use_history"]] == [1]
    fresh.close()

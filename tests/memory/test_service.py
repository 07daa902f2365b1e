"""The memory service's behaviour, run against every backend in ``conftest.BACKENDS``."""

from __future__ import annotations

import pytest
from bench.memory_dedup import changed_words, value_swap

from sediment.errors import NotFoundError, PermissionDeniedError, ValidationError
from sediment.memory import MemoryService, MemoryStore, Scope
from sediment.memory.correction import content_words, correction_signals


def ids(result: dict[str, object]) -> list[str]:
    return [m["id"] for m in result["memories"]]  # type: ignore[index, union-attr]


def test_save_then_near_duplicate_supersedes(service: MemoryService) -> None:
    first = service.save("alice", "The API listens on port 8080", "fact", source="explicit")
    assert first["status"] == "created" and first["confidence"] == 1.0
    same = service.save("alice", "The API listens on port 8080", "fact")
    assert same["status"] == "exists" and same["id"] == first["id"]  # identical: no-op
    again = service.save("alice", "The API listens on port 8080 for HTTP", "fact",
                         supersedes=first["id"])
    assert again["status"] == "updated"
    assert again["superseded_id"] == first["id"] and again["similarity"] > 0.5
    assert again["looks_like_correction"] is False
    got = service.recall("alice", "which port does the API listen on")
    assert ids(got) == [again["id"]]


def test_dedup_compares_across_categories_within_one_scope(service: MemoryService) -> None:
    a = service.save("alice", "Tests use pytest fixtures", "convention")
    b = service.save("alice", "Tests use unittest fixtures", "correction", source="corrected")
    assert b["status"] == "updated" and b["superseded_id"] == a["id"]
    c = service.save("alice", "Tests use pytest fixtures", "fact", scope="project")
    assert c["status"] == "created"


def test_threshold_is_configurable(memory_store: MemoryStore, embedder: object) -> None:
    strict = MemoryService(memory_store, embedder, dedup_threshold=1.0)  # type: ignore[arg-type]
    strict.save("alice", "Deploys run at night", "fact")
    assert strict.save("alice", "Deploys run at night daily", "fact")["status"] == "created"
    loose = MemoryService(memory_store, embedder, dedup_threshold=0.2)  # type: ignore[arg-type]
    out = loose.save("alice", "Deploys run every night", "fact")
    assert out["status"] == "updated" and 0.2 <= out["similarity"] < 1.0
    with pytest.raises(ValidationError, match="dedup threshold"):
        MemoryService(memory_store, embedder, dedup_threshold=0)  # type: ignore[arg-type]


@pytest.mark.parametrize(("old", "new", "signals"), [
    ("Alice lives in Berlin", "Alice lives in Munich", ["names"]),
    ("The build takes 5 minutes", "The build takes 12 minutes", ["numbers"]),
    ("Use tabs for indentation", "Do not use tabs for indentation", ["negation"]),
    ("User prefers dark mode", "The user prefers dark mode", []),
])
def test_correction_signals(old: str, new: str, signals: list[str]) -> None:
    assert correction_signals(old, new) == signals


@pytest.mark.parametrize(("old", "new", "swap"), [
    ("The frontend is built with React", "The frontend is built with Svelte", True),
    ("The team lead is Maria Lopez", "The team lead is Daniel Kim", True),
    ("User prefers tabs for indentation", "User prefers spaces for indentation", True),
    ("The user's cat is named Miso", "The user's cat is twelve years old", True),
    ("Use pytest for all new tests", "Do not use pytest for new tests; use unittest", False),
    ("The database is PostgreSQL 15", "We run PostgreSQL version 15 as the database", False),
    ("React", "Svelte", False),
    ("The frontend is built with React", "The frontend is built with React", False),
])
def test_value_swaps(old: str, new: str, swap: bool) -> None:
    assert value_swap(old, new) is swap


def test_changed_and_content_words() -> None:
    planned = "Jordan is thinking about adopting a second rescue dog from the city shelter soon"
    adopted = "Jordan adopted a rescue dog last spring"
    assert changed_words(adopted, planned) == 5
    assert content_words("The user's dogs were adopted in spring") == {"dog", "adopt",
                                                                         "spring"}


def test_a_related_statement_is_saved_beside_the_old_one(memory_store: MemoryStore,
                                                         embedder: object) -> None:
    old = "Caroline went to a support group meeting yesterday and found it powerful"
    new = "Caroline wants to study counselling to help young people find a support group"
    words = MemoryService(memory_store, embedder, dedup_threshold=0.2)  # type: ignore[arg-type]
    first = words.save("alice", old, "fact")
    assert words.save("alice", new, "fact")["status"] == "created"
    cosine_alone = MemoryService(memory_store, embedder,  # type: ignore[arg-type]
                                 dedup_threshold=0.2, max_changed_words=None)
    got = cosine_alone.save("bob", old, "fact")
    again = cosine_alone.save("bob", new, "fact")
    assert first["status"] == got["status"] == "created"
    assert again["status"] == "updated" and again["superseded_id"] == got["id"]


def test_a_value_swap_supersedes_below_the_threshold(service: MemoryService) -> None:
    old = service.save("alice", "The team lead is Maria Lopez", "fact")
    new = service.save("alice", "The team lead is Daniel Kim", "fact")
    assert new["status"] == "updated" and new["superseded_id"] == old["id"]
    assert new["similarity"] < service.dedup_threshold
    assert new["correction_signals"] == ["names"]


def test_sources_set_confidence_and_categories_are_checked(service: MemoryService) -> None:
    for source, conf, text in (("explicit", 1.0, "Coffee is in the left cupboard"),
                               ("corrected", 0.9, "Builds need Node 20 or newer"),
                               ("inferred", 0.7, "Reviews happen asynchronously")):
        out = service.save("alice", text, "fact", source=source, scope="project")
        assert out["confidence"] == conf
    with pytest.raises(ValidationError, match="category 'mood' is unknown"):
        service.save("alice", "x", "mood")
    with pytest.raises(ValidationError, match="content must be a non-empty"):
        service.save("alice", "   ", "fact")
    with pytest.raises(ValidationError, match="source 'guess'"):
        service.save("alice", "x", "fact", source="guess")
    for wrong in (["explicit"], {"explicit": 1}):  # through the Python API: any object
        with pytest.raises(ValidationError, match=r"source .* is unknown"):
            service.save("alice", "x", "fact", source=wrong)
    assert service.list_memories("alice")["total"] == 3


@pytest.mark.parametrize("limit", [0, 51, -1, True, "5"])
def test_recall_limit_bounds(service: MemoryService, limit: object) -> None:
    service.save("alice", "something to find", "fact")
    with pytest.raises(ValidationError, match="limit must be an integer from 1 to 50"):
        service.recall("alice", "something", limit=limit)


def test_recall_filters_and_counts_uses(service: MemoryService) -> None:
    a = service.save("alice", "Prefers black for Python formatting", "preference")
    service.save("alice", "The staging database is Postgres 16", "fact")
    only = service.recall("alice", "Python formatting", category="preference")
    assert ids(only) == [a["id"]]
    assert only["memories"][0]["use_count"] == 1
    service.recall("alice", "Python formatting", category="preference")
    assert service.flush() == 1
    listed = service.list_memories("alice")["memories"]
    top = next(m for m in listed if m["id"] == a["id"])
    assert top["use_count"] == 2 and top["last_used_ms"] is not None
    assert listed[0]["id"] == a["id"]  # list sorts by use count first


def test_use_counts_are_exact_across_services(memory_store: MemoryStore,
                                              embedder: object) -> None:
    one = MemoryService(memory_store, embedder)  # type: ignore[arg-type]
    two = MemoryService(memory_store, embedder)  # type: ignore[arg-type]
    ref = one.save("alice", "Lint with ruff before committing", "instruction")["id"]
    for _ in range(3):
        one.recall("alice", "lint")
    for _ in range(4):
        two.recall("alice", "lint")
    one.flush()
    two.flush()
    three = MemoryService(memory_store, embedder)  # type: ignore[arg-type]
    shown = three.show("alice", ref)
    assert shown["memory"]["use_count"] == 7
    assert sum(h["count"] for h in shown["use_history"]) == 7


def test_actors_are_isolated(service: MemoryService) -> None:
    service.save("alice", "Alice reviews pull requests in the morning", "pattern")
    a_user = service.save("alice", "Alice writes commit messages in English", "preference")
    a_proj = service.save("alice", "Alice runs the nightly job", "fact", scope="project")
    service.save("bob", "Bob prefers short answers", "preference")
    for query in ("commit messages", "nightly job"):
        assert all(m["actor"] == "bob" for m in service.recall("bob", query)["memories"])
    assert [m["actor"] for m in service.list_memories("bob")["memories"]] == ["bob"]
    for mid in (a_user["id"], a_proj["id"]):
        with pytest.raises(NotFoundError, match="no such memory among those of actor 'bob'"):
            service.update("bob", mid, {"content": "taken over"})
        with pytest.raises(NotFoundError):
            service.delete("bob", mid)
        with pytest.raises(NotFoundError):
            service.show("bob", mid)
    service.manage("bob", "forget_all", confirm=True)
    assert service.list_memories("alice")["total"] == 3
    service.flush()
    assert all(m["use_count"] == 0 for m in service.list_memories("alice")["memories"])


def test_update_keeps_context_and_relationships(service: MemoryService) -> None:
    first = service.save("alice", "The API runs on port 8080", "fact", scope="project",
                         context="backend", related_to=["docs/api.md:12", "api-unit", 999])
    assert first["status"] == "created"
    out = service.update("alice", first["id"], {"content": "The API runs on port 9090"})
    assert out["looks_like_correction"] is True and out["correction_signals"] == ["numbers"]
    shown = service.show("alice", out["id"])
    assert shown["memory"]["context"] == "backend"
    assert shown["related_to"] == ["docs/api.md:12", "kcp:api-unit", "999"]
    assert [v["id"] for v in shown["versions"]] == [out["id"], first["id"]]
    assert ids(service.recall("alice", "API port")) == [out["id"]]
    with pytest.raises(ValidationError, match="superseded"):
        service.update("alice", first["id"], {"content": "again"})
    with pytest.raises(ValidationError, match="updates: unknown field"):
        service.update("alice", out["id"], {"colour": "red"})


def test_delete_and_forget_all(service: MemoryService) -> None:
    a = service.save("alice", "Uses Vim keybindings", "preference")
    b = service.save("alice", "Releases happen on Tuesdays", "fact", scope="project")
    assert service.delete("alice", a["id"])["status"] == "deleted"
    assert ids(service.recall("alice", "Vim keybindings", min_score=0.0)) == [b["id"]]
    with pytest.raises(NotFoundError, match="forgotten"):
        service.delete("alice", a["id"])
    with pytest.raises(ValidationError, match="confirm: true"):
        service.forget_all("alice")
    assert service.list_memories("alice")["total"] == 1
    assert service.forget_all("alice", confirm=True)["forgotten"] == 1
    assert service.recall("alice", "releases")["memories"] == []


def test_secret_is_refused_and_nothing_written(service: MemoryService,
                                                memory_store: MemoryStore) -> None:
    before = memory_store.version()
    with pytest.raises(ValidationError, match="an AWS key"):
        service.save("alice", "the deploy key is AKIAIOSFODNN7EXAMPLE", "fact")
    assert memory_store.version() == before
    assert service.list_memories("alice")["total"] == 0


def test_global_is_human_governed(service: MemoryService) -> None:
    proposed = service.save("alice", "All services log in UTC", "convention", scope="global")
    assert proposed["status"] == "proposed"
    assert service.recall("bob", "UTC logging")["memories"] == []
    human = service.save("admin", "Timestamps are ISO 8601", "convention", scope="global",
                         human=True)
    assert human["status"] == "created"
    seen = service.recall("bob", "ISO 8601 timestamps", scope="global")["memories"]
    assert [m["id"] for m in seen] == [human["id"]] and seen[0]["scope"] == "global"
    with pytest.raises(PermissionDeniedError, match="governed by humans"):
        service.delete("bob", human["id"])
    assert service.delete("bob", human["id"], human=True)["status"] == "deleted"


def test_an_agents_global_saves_are_deduplicated(service: MemoryService) -> None:
    """Proposals dedup like other saves: a near-duplicate of the actor's own pending
    proposal supersedes it; a restatement of a global memory writes nothing; a correction
    of one is proposed, naming it."""
    first = service.save("alice", "All services log timestamps in UTC", "convention",
                         scope="global")
    again = service.save("alice", "All services log their timestamps in UTC", "convention",
                         scope="global")
    assert again["status"] == "proposed" and again["superseded_id"] == first["id"]
    pending = [m["id"] for m in service.list_memories("alice")["memories"]]
    assert pending == [again["id"]]
    other = service.save("bob", "All services log their timestamps in UTC", "convention",
                         scope="global")
    assert other["status"] == "proposed" and "superseded_id" not in other  # not bob's
    rule = service.save("admin", "Timestamps are written in ISO 8601 by every service",
                        "convention", scope="global", human=True)
    versions = len(service.show("admin", rule["id"])["versions"])
    same = service.save("bob", "Timestamps are written in ISO 8601 by every single service",
                        "fact", scope="global")
    assert same["status"] == "exists" and same["id"] == rule["id"]
    assert len(service.list_memories("bob")["memories"]) == 2  # other and the global rule
    fix = service.save("bob", "Timestamps are written in ISO 8602 by every service",
                       "convention", scope="global")
    assert fix["status"] == "proposed" and fix["corrects_id"] == rule["id"]
    assert fix["correction_signals"] == ["numbers"]
    assert len(service.show("admin", rule["id"])["versions"]) == versions


def test_purge_removes_forgotten_content(service: MemoryService,
                                         memory_store: MemoryStore) -> None:
    a = service.save("alice", "My old laptop is a ThinkPad", "fact")
    b = service.save("alice", "My old laptop was a ThinkPad", "fact", supersedes=a["id"])
    keep = service.save("alice", "Prefers pnpm over npm", "preference")
    service.delete("alice", b["id"])
    assert service.purge("alice")["purged"] == 2
    contents = [s.chunk.content for s in memory_store.memories("alice", (Scope.USER,))]
    assert contents == ["Prefers pnpm over npm"]
    assert ids(service.recall("alice", "laptop", min_score=0.0)) == [keep["id"]]
    with pytest.raises(NotFoundError):
        service.show("alice", a["id"])


def test_contexts(service: MemoryService) -> None:
    service.save("alice", "Uses strict mypy", "convention", context="python")
    service.set_context("alice", "python", description="Python habits", priority=0.9)
    rows = service.contexts("alice")["contexts"]
    assert rows == [{"name": "python", "scope": "user", "description": "Python habits",
                     "priority": 0.9, "memories": 1}]
    assert service.contexts("bob")["contexts"] == []


def test_the_timer_flushes_uses_without_a_call(memory_store: MemoryStore,
                                                embedder: object) -> None:
    import time

    svc = MemoryService(memory_store, embedder)  # type: ignore[arg-type]
    ref = svc.save("alice", "Standups are at 9:30", "fact")["id"]
    svc.recall("alice", "standup time", min_score=0.0)
    before = memory_store.version()
    svc.start_flusher(0.05)
    try:
        deadline = time.monotonic() + 30
        while memory_store.version() == before and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        svc.close()
    fresh = MemoryService(memory_store, embedder)  # type: ignore[arg-type]
    assert fresh.show("alice", ref)["memory"]["use_count"] == 1

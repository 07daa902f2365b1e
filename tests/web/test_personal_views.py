"""The memories and context pages' data over real stores: filters, counts, states,
ordering and pages."""

from __future__ import annotations

from pathlib import Path

from sediment.context import ContextLoop, FileContextStore
from sediment.embed import HashEmbedder
from sediment.memory import FileMemoryStore, MemoryService
from sediment.server.web._memories import Filter, listing
from sediment.server.web._progress import progress
from sediment.store import LayerSet
from tests.mcp.conftest import make_store

TOPICS = ["tabs", "coffee", "rust", "vim", "dates", "tests", "docker", "emacs", "sql",
          "yaml", "git", "ci"]


def _memory(tmp_path: Path) -> MemoryService:
    emb = HashEmbedder()
    ls = LayerSet.from_directory(make_store(tmp_path / "store"))
    store = FileMemoryStore(ls, tmp_path / "data", profile=emb.profile.to_dict(),
                            dim=emb.profile.dim)
    return MemoryService(store, emb, dedup_threshold=1.0)  # twelve notes, no dedup


def test_memories_are_filtered_counted_and_paged(tmp_path: Path) -> None:
    mem = _memory(tmp_path)
    for i, topic in enumerate(TOPICS):
        mem.save("alice", f"Alice's note {i} is about {topic} only.",
                 "fact" if i % 2 else "preference", "explicit", "user",
                 "home" if i < 4 else None, human=True)
    mem.save("bob", "Bob's private note about tabs.", "fact", scope="user", human=True)
    first = listing(mem, "alice", Filter(None, None, None), 1)
    assert first.total == 12 and first.page.count == 2 and len(first.memories) == 10
    second = listing(mem, "alice", Filter(None, None, None), 2)
    shown = {m["id"] for m in first.memories} | {m["id"] for m in second.memories}
    assert len(shown) == 12
    assert all("Bob" not in m["content"] for m in first.memories + second.memories)
    assert dict(first.by_category) == {"preference": 6, "fact": 6}
    assert [(c["name"], c["memories"]) for c in first.contexts] == [("home", 4)]
    assert first.uncategorised == 8
    home = listing(mem, "alice", Filter.of({"context": "home", "category": "fact"}), 1)
    assert home.page.total == 2 and all(m["context"] == "home" for m in home.memories)
    odd = Filter.of({"category": "<script>", "scope": "nowhere", "context": ""})
    assert odd == Filter(None, None, None)
    assert listing(mem, "alice", Filter(None, None, None), 99).page.number == 2


def test_context_items_by_state_and_usefulness(tmp_path: Path) -> None:
    emb = HashEmbedder()
    store = FileContextStore(tmp_path / "ctx", profile=emb.profile.to_dict(),
                             dim=emb.profile.dim)
    loop = ContextLoop(store, emb, project="shop")
    old = loop.store_context("alice", "Old output: the first build log.", "output")["id"]
    for i in range(1, 10):
        loop.store_iteration_result("alice", i, f"Iteration {i} tried {TOPICS[i]}.", i != 3)
    skill = loop.store_context("alice", "Skill: cache the date parser.", "skill")["id"]
    loop.mark_useful("alice", skill, True)
    loop.store_context("bob", "Bob's own task.", "task")
    got = progress(loop, "alice", None, None, 1)
    assert got.projects == [("shop", 11)] and got.project == "shop"
    assert got.by_state["active"] == 7 and got.by_state["aging"] == 4
    assert got.items[0]["id"] == skill and got.items[0]["usefulness"] == 0.6
    assert [r["iteration"] for r in got.iterations][:3] == [9, 8, 7]
    assert next(r for r in got.iterations if r["iteration"] == 3)["success"] is False
    assert got.page.count == 2
    aging = progress(loop, "alice", "shop", "aging", 1)
    assert {r["state"] for r in aging.items} == {"aging"} and old in {r["id"] for r in aging.items}
    assert all("Bob" not in r["content"] for r in got.items + aging.items)
    assert progress(loop, "carol", None, None, 1).projects == []

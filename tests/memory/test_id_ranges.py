"""An actor's own memory file numbers from the actor range (``store.ids.ACTOR_IDS``), and a
file written before the ranges (ids from 2^31, the project's range) keeps working."""

from __future__ import annotations

from pathlib import Path

from sediment.embed import HashEmbedder
from sediment.memory import FileMemoryStore, MemoryService
from sediment.memory.files import ACTOR_FILE, ACTOR_USAGE_FILE
from sediment.store import LayerName, LayerSet
from sediment.store.ids import ACTOR_IDS, PROJECT_IDS, WRITTEN_START
from tests.memory.conftest import _files


def test_an_actor_file_from_before_the_ranges_reads_and_grows_in_the_actor_range(
        tmp_path: Path) -> None:
    embedder = HashEmbedder()
    old_store = _files(tmp_path, embedder)
    assert isinstance(old_store, FileMemoryStore)
    path = old_store.actor_path("alice")
    old_store._actor_sets["alice"] = LayerSet(  # how every version before numbered it
        {LayerName.USER: path, LayerName.LOCAL: path.parent / ACTOR_USAGE_FILE},
        ids=PROJECT_IDS)
    old = MemoryService(old_store, embedder)
    legacy = old.save("alice", "Alice prefers tabs over spaces", "preference")
    old.close()
    assert legacy["chunk_id"] == WRITTEN_START and path.name == ACTOR_FILE

    svc = MemoryService(_files(tmp_path, embedder), embedder)
    try:
        new = svc.save("alice", "Alice deploys on Fridays only", "fact")
        project = svc.save("alice", "The queue worker restarts hourly", "fact",
                           scope="project")
        assert new["chunk_id"] == ACTOR_IDS.first
        assert project["chunk_id"] == WRITTEN_START  # the project's own range, as before
        listed = {m["id"]: m["content"]
                  for m in svc.manage("alice", "list")["memories"]}
        assert listed == {legacy["id"]: "Alice prefers tabs over spaces",
                          new["id"]: "Alice deploys on Fridays only",
                          project["id"]: "The queue worker restarts hourly"}
        got = svc.recall("alice", "tabs or spaces?")["memories"]
        assert got[0]["content"] == "Alice prefers tabs over spaces"
    finally:
        svc.close()

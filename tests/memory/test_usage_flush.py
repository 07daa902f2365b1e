"""A flush that fails part way keeps every count it did not write, for the next flush."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sediment.embed import HashEmbedder
from sediment.memory import FileMemoryStore, MemoryService
from sediment.memory.store import Place
from sediment.store import LayerSet


class FailingOnce:
    """The real file store, whose first append of a use event at ``place`` fails (a full
    disk, a lost connection)."""

    def __init__(self, real: FileMemoryStore, place: Place) -> None:
        self.real, self.place, self.failed = real, place, False

    def append(self, place: Place, actor: str, memories: Sequence[Any],
               events: Sequence[Any]) -> Any:
        if place is self.place and not memories and not self.failed:
            self.failed = True
            raise OSError("disk full")
        return self.real.append(place, actor, memories, events)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.mark.parametrize("failing", [Place.USER_USAGE, Place.PROJECT])
def test_counts_of_every_unwritten_group_survive_a_failed_flush(tmp_path: Path,
                                                                failing: Place) -> None:
    emb = HashEmbedder()
    (tmp_path / "project").mkdir()
    real = FileMemoryStore(LayerSet.from_directory(tmp_path / "project"), tmp_path / "data",
                           profile=emb.profile.to_dict(), dim=emb.profile.dim,
                           embedder_metadata=emb.metadata())
    store = FailingOnce(real, failing)
    svc = MemoryService(store, emb)  # type: ignore[arg-type]
    own = svc.save("alice", "Standups are at 9:30", "fact")["id"]
    shared = svc.save("alice", "The CI runs on Debian", "fact", scope="project")["id"]
    svc.recall("alice", "standup", min_score=0.0, scope="user")
    svc.recall("alice", "CI Debian", min_score=0.0, scope="project")
    with pytest.raises(OSError):
        svc.flush()
    assert svc.flush() >= 1
    svc.close()
    fresh = MemoryService(real, emb)
    assert fresh.show("alice", own)["memory"]["use_count"] == 1
    assert fresh.show("alice", shared)["memory"]["use_count"] == 1

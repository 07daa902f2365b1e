"""The memory file stores i8 vectors, as the context store does, and dedup decides alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment.embed import HashEmbedder
from sediment.format import LayerFile
from sediment.memory import FileMemoryStore, MemoryService
from sediment.store import LayerSet

PAIRS = [("The frontend uses React", "The frontend uses Svelte"),
         ("Deploys freeze on Fridays", "Deploys freeze on Fridays and Mondays"),
         ("The user prefers tabs", "Kafka is owned by the data team"),
         ("Standups are at 9:30", "Standups are at 9:30 every day")]


def _service(root: Path, etype: str | None) -> MemoryService:
    emb = HashEmbedder()
    (root / "project").mkdir(parents=True)
    store = FileMemoryStore(LayerSet.from_directory(root / "project"), root / "data",
                            profile=emb.profile.to_dict(), dim=emb.profile.dim,
                            element_type=etype)
    return MemoryService(store, emb, dedup_threshold=0.6)


def test_memories_are_stored_as_i8_with_the_same_decisions(tmp_path: Path) -> None:
    quantised, full = _service(tmp_path / "i8", None), _service(tmp_path / "f32", "f32")
    for n, (first, second) in enumerate(PAIRS):
        got = []
        for svc in (quantised, full):
            svc.save(f"a{n}", first, "fact")
            out = svc.save(f"a{n}", second, "fact")
            got.append((out["status"], out.get("similarity")))
        assert got[0][0] == got[1][0], (first, second, got)
        if got[0][1] is not None:
            assert got[0][1] == pytest.approx(got[1][1], abs=0.01)
    assert isinstance(quantised.store, FileMemoryStore)
    path = quantised.store.actor_path("a0")
    assert LayerFile.open(path).element_type == "i8"
    assert isinstance(full.store, FileMemoryStore)
    assert LayerFile.open(full.store.actor_path("a0")).element_type == "f32"
    hit = quantised.recall("a0", "frontend Svelte")["memories"]
    assert [m["content"] for m in hit] == ["The frontend uses Svelte"]

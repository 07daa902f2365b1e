"""Recall's absolute score and floor, corrections above what they correct, and the short
handles agents call memories by (every backend)."""

from __future__ import annotations

import pytest

from sediment.errors import NotFoundError, ValidationError
from sediment.memory import MemoryService
from sediment.memory.relevance import MIN_SCORES
from sediment.store.ids import U32_MAX, WRITTEN_START

FACTS = ["The user's dog is named Max.", "Deploys to staging happen on Tuesdays",
         "The frontend uses React", "Alice reviews code in the morning"]


def _fill(service: MemoryService) -> list[dict[str, object]]:
    return [service.save("alice", text, "fact", "explicit") for text in FACTS]


def test_nonsense_finds_nothing_and_scores_are_absolute(service: MemoryService) -> None:
    _fill(service)
    assert service.recall("alice", "zzqx")["memories"] == []
    assert service.recall("alice", "zzqx")["min_score"] == MIN_SCORES["sediment-hash-v1"]
    loose = service.recall("alice", "zzqx", min_score=0.0)["memories"]
    assert loose and all(m["score"] < service.min_score for m in loose)
    hit = service.recall("alice", "the frontend React")["memories"]
    assert hit[0]["content"] == "The frontend uses React"
    assert service.min_score <= hit[0]["score"] < 0.9  # not normalised to 1.0
    again = service.recall("alice", "the frontend React, and more words")["memories"][0]
    assert again["score"] != pytest.approx(1.0)
    assert service.recall("alice", "the frontend React", min_score=1.0)["memories"] == []


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.3", True])
def test_min_score_is_checked(service: MemoryService, bad: object) -> None:
    with pytest.raises(ValidationError, match="min_score"):
        service.recall("alice", "React", min_score=bad)


@pytest.mark.parametrize("how", [{"category": "correction"},
                                 {"category": "fact", "source": "corrected"}])
def test_a_correction_ranks_above_the_fact_it_corrects(service: MemoryService,
                                                        how: dict[str, str]) -> None:
    _fill(service)
    fix = service.save("alice", "Actually my dog's name is Rex, not Max.",
                       how["category"], how.get("source", "explicit"))
    got = service.recall("alice", "what is the user's dog named?")["memories"]
    assert got[0]["id"] == fix["id"], [(m["content"], m["score"]) for m in got]
    rest = [m["score"] for m in got[1:]]
    assert all(got[0]["score"] > s for s in rest)


def test_an_unrelated_correction_does_not_jump_the_queue(service: MemoryService) -> None:
    _fill(service)
    service.save("alice", "Correction: the CI cache key is the lockfile hash", "correction",
                 "corrected")
    got = service.recall("alice", "the frontend React")["memories"]
    assert got[0]["content"] == "The frontend uses React"


def test_short_handles_name_memories_everywhere(service: MemoryService) -> None:
    saved = _fill(service)
    assert [s["id"] for s in saved] == ["u1", "u2", "u3", "u4"]
    assert all(WRITTEN_START <= int(str(s["chunk_id"])) <= U32_MAX for s in saved)
    proj = service.save("alice", "The queue worker restarts hourly", "fact", scope="project")
    assert proj["id"] == "p1"
    assert service.save("bob", "Bob wants terse answers", "preference")["id"] == "u1"
    got = service.recall("alice", "the frontend React")["memories"]
    assert got[0]["id"] == "u3"
    shown = service.show("alice", "u3")
    assert shown["memory"]["content"] == "The frontend uses React"
    assert service.show("alice", f"u{saved[2]['chunk_id']}")["memory"]["id"] == "u3"
    new = service.update("alice", "u3", {"content": "The frontend uses Svelte"})
    assert (new["id"], new["superseded_id"]) == ("u5", "u3")
    versions = service.show("alice", "u5")["versions"]
    assert [(v["id"], v["supersedes"], v["superseded_by"]) for v in versions] == [
        ("u5", "u3", None), ("u3", None, "u5")]
    with pytest.raises(ValidationError, match="superseded by u5"):
        service.update("alice", "u3", {"content": "again"})
    assert service.manage("alice", "delete", "u1")["id"] == "u1"
    service.purge("alice")
    assert service.show("alice", "u2")["memory"]["content"] == FACTS[1]
    assert service.save("alice", "Kafka is owned by the data team", "fact")["id"] == "u6"
    with pytest.raises(NotFoundError, match="bob"):
        service.show("bob", "p1")
    assert len(max((m["id"] for m in service.list_memories("alice")["memories"]),
                   key=len)) <= 6


def test_global_handles_are_everyones(service: MemoryService) -> None:
    rule = service.save("rev", "Releases are cut on Mondays", "convention", scope="global",
                        human=True)
    assert rule["id"] == "g1"
    for actor in ("alice", "bob"):
        assert [m["id"] for m in service.recall(actor, "releases cut Mondays")["memories"]
                ] == ["g1"]
        assert service.show(actor, "g1")["memory"]["content"] == "Releases are cut on Mondays"
    with pytest.raises(NotFoundError, match="g2"):
        service.show("alice", "g2")

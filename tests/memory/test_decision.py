"""The save decision (issue 27): distinct facts are kept, corrections replace what they
correct, identical re-saves write nothing, and the agent has the last word."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp import Client
from sediment.errors import NotFoundError, ValidationError
from sediment.memory import MemoryService
from sediment.memory.decision import Verdict, decide, normalise
from tests.memory.test_mcp import TIMEOUT, server_for, store  # noqa: F401

STAGING = "Deploys to staging happen on Tuesdays"
PRODUCTION = "Deploys to production happen on Thursdays"
DOG = "The user's dog is named Max."
REX = "Actually my dog's name is Rex, not Max."

DISTINCT = [
    (STAGING, PRODUCTION),
    ("The Kafka cluster is owned by Alice", "The Postgres cluster is owned by Bob"),
    ("The web app lives in the acme/web repository",
     "The docs site lives in the acme/docs repository"),
    ("The user speaks French", "The user speaks German"),
    ("Bob reviews the backend pull requests", "Carol reviews the frontend pull requests"),
]


@pytest.mark.parametrize(("old", "new"), DISTINCT)
@pytest.mark.parametrize("cosine", [0.6, 0.8, 0.9])
def test_distinct_facts_about_one_subject_are_different(old: str, new: str,
                                                        cosine: float) -> None:
    assert decide(old, new, cosine).verdict is Verdict.DIFFERENT


def test_a_swapped_value_is_a_correction_with_what_changed() -> None:
    got = decide("The frontend uses React", "The frontend uses Svelte", 0.6)
    assert got.verdict is Verdict.CORRECTION
    assert (got.old_value, got.new_value) == ("react", "svelte")


def test_a_correction_naming_the_old_value_corrects_it_even_at_low_cosine() -> None:
    got = decide(DOG, REX, 0.45, correcting=True)
    assert got.verdict is Verdict.CORRECTION
    assert got.old_value == "max" and "rex" in got.new_value


def test_restatements_and_unrelated() -> None:
    assert decide("Use pytest for tests", "use pytest for tests!", 0.99).verdict \
        is Verdict.RESTATEMENT
    assert decide("The frontend is built with React", "React is what the frontend uses",
                  0.91).verdict is Verdict.RESTATEMENT
    assert decide("The user speaks French", "The user does not speak French", 0.9).verdict \
        is Verdict.CORRECTION
    assert decide("The user speaks French", "Backups run nightly", 0.1).verdict \
        is Verdict.UNRELATED
    assert normalise("  The  USER likes tea. ") == normalise("the user likes tea")


def test_long_texts_are_decided_quickly_and_kept_apart() -> None:
    old = " ".join(f"word{i}" for i in range(2_000))
    new = " ".join(f"word{i}" for i in range(1_000, 3_000))
    assert decide(old, new, 0.6).verdict is Verdict.DIFFERENT


def _active(service: MemoryService, actor: str = "alice") -> dict[str, dict[str, Any]]:
    return {m["content"]: m for m in service.list_memories(actor, limit=100)["memories"]}


@pytest.mark.parametrize(("old", "new"), DISTINCT)
def test_distinct_facts_are_both_kept(service: MemoryService, old: str, new: str) -> None:
    first = service.save("alice", old, "fact")
    second = service.save("alice", new, "fact")
    assert second["status"] == "created", second
    assert set(_active(service)) == {old, new}
    again = service.save("alice", old, "fact")  # re-saving the first hides nothing
    assert again["status"] == "exists" and again["id"] == first["id"]
    assert set(_active(service)) == {old, new}


def test_an_explicit_correction_supersedes_and_is_flagged(service: MemoryService) -> None:
    service.save("alice", "The user prefers tea in the morning", "preference")
    first = service.save("alice", DOG, "fact")
    got = service.save("alice", REX, "correction", "corrected")
    assert got["status"] == "updated" and got["superseded_id"] == first["id"], got
    assert got["looks_like_correction"] is True and got["decision"] == "correction"
    assert got["changed"]["from"] == "max" and "rex" in got["changed"]["to"]
    assert DOG not in _active(service) and REX in _active(service)
    found = [m["content"] for m in service.recall("alice", "what is my dog called?")["memories"]]
    assert DOG not in found and REX in found
    why = service.show("alice", got["id"])["versions"][0]["superseded_because"]
    assert why["correction"] is True


def test_identical_resave_is_a_no_op_keeping_uses_and_creation(
        service: MemoryService) -> None:
    first = service.save("alice", "Deploys freeze on Fridays", "instruction")
    created = _active(service)["Deploys freeze on Fridays"]["created_at_ms"]
    counts = []
    for text in ("Deploys freeze on Fridays", "  deploys FREEZE on   fridays. ",
                 "Deploys freeze on Fridays"):
        for _ in range(4):
            service.recall("alice", "deploy freeze")
        got = service.save("alice", text, "instruction")
        assert got["status"] == "exists" and got["id"] == first["id"], got
        row = _active(service)["Deploys freeze on Fridays"]
        assert row["created_at_ms"] == created
        counts.append(row["use_count"])
    assert counts == [4, 8, 12]
    assert service.list_memories("alice")["total"] == 1


def test_the_agent_has_the_last_word(service: MemoryService) -> None:
    react = service.save("alice", "The frontend uses React", "fact")
    kept = service.save("alice", "The frontend uses Svelte", "fact", keep_separate=True)
    assert kept["status"] == "created"
    assert {"The frontend uses React", "The frontend uses Svelte"} <= set(_active(service))
    other = service.save("alice", "Backups run every night at two", "fact",
                         supersedes=react["id"])
    assert other["status"] == "updated" and other["superseded_id"] == react["id"]
    assert "The frontend uses React" not in _active(service)
    with pytest.raises(NotFoundError, match="supersedes"):
        service.save("alice", "x y z", "fact", supersedes="u999")
    with pytest.raises(ValidationError, match="no longer active"):
        service.save("alice", "x y z", "fact", supersedes=react["id"])
    with pytest.raises(ValidationError, match="contradict"):
        service.save("alice", "x y z", "fact", supersedes=kept["id"], keep_separate=True)
    with pytest.raises(ValidationError, match="keep_separate"):
        service.save("alice", "x y z", "fact", keep_separate="yes")


def test_close_memories_kept_beside_a_save_are_named(service: MemoryService) -> None:
    first = service.save("alice", "The frontend uses React", "fact")
    got = service.save("alice", "The frontend uses React with TypeScript in strict mode",
                       "fact", keep_separate=True)
    near = got["near"]
    assert near[0]["id"] == first["id"]
    assert near[0]["content"] == "The frontend uses React"
    assert 0.6 <= near[0]["similarity"] <= 1.0


def test_restore_and_history(service: MemoryService) -> None:
    react = service.save("alice", "The frontend uses React", "fact")
    svelte = service.save("alice", "The frontend uses Svelte", "fact")
    assert svelte["superseded_id"] == react["id"]
    history = service.manage("alice", "history", svelte["id"])
    assert [v["id"] for v in history["versions"]] == [svelte["id"], react["id"]]
    back = service.manage("alice", "restore", react["id"])
    assert back["status"] == "restored" and back["restored_id"] == react["id"]
    assert {"The frontend uses React", "The frontend uses Svelte"} <= set(_active(service))
    assert service.show("alice", back["id"])["versions"][0]["restored_from"] == react["id"]
    with pytest.raises(ValidationError, match="only a superseded memory"):
        service.manage("alice", "restore", svelte["id"])


def test_the_tools_take_supersedes_keep_separate_restore_and_history(
        store: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    server = server_for(store, "alice", monkeypatch)

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                props = tools["save_memory"].input_schema["properties"]
                for name in ("supersedes", "keep_separate"):
                    assert props[name]["description"], name
                action = tools["manage_memory"].input_schema["properties"]["action"]
                assert {"restore", "history"} <= set(action["enum"])
                out = tools["save_memory"].output_schema["properties"]
                for name in ("near", "changed", "decision", "superseded_id"):
                    assert out[name]["description"], name

                async def save(**args: Any) -> dict[str, Any]:
                    got = await client.call_tool("save_memory", args)
                    assert not got.is_error, got
                    return dict(got.structured_content or {})

                first = await save(content=STAGING, category="fact")
                second = await save(content=PRODUCTION, category="fact")
                assert second["status"] == "created"
                dog = await save(content=DOG, category="fact")
                rex = await save(content=REX, category="correction", source="corrected")
                assert rex["superseded_id"] == dog["id"] and rex["looks_like_correction"]
                same = await save(content=STAGING.upper(), category="fact")
                assert same["status"] == "exists" and same["id"] == first["id"]
                sep = await save(content="Deploys to staging happen on Wednesdays",
                                 category="fact", keep_separate=True)
                assert sep["status"] == "created"
                rep = await save(content="Staging deploys are on Wednesdays now",
                                 category="fact", supersedes=sep["id"])
                assert rep["superseded_id"] == sep["id"]
                got = await client.call_tool("manage_memory", {
                    "action": "restore", "memory_id": dog["id"]})
                assert not got.is_error and DOG in str(got.structured_content)
                got = await client.call_tool("manage_memory", {
                    "action": "history", "memory_id": rex["id"]})
                assert not got.is_error and dog["id"] in str(got.structured_content)

    anyio.run(main)

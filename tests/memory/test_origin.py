"""An imported memory's ``origin`` (``sediment.interop``): kept in its save event on every
backend, checked like content, and what ``existing`` and ``active`` answer."""

from __future__ import annotations

import pytest

from sediment.errors import ValidationError
from sediment.memory import MemoryService

ORIGIN = {"format": "mcp-memory", "part": "observation", "entity": "Ada", "text": "likes tea",
          "nested": {"list": [1, 2.5, None, "x"]}}


def test_origin_is_kept_and_shown(service: MemoryService) -> None:
    out = service.save("ada", "Ada: likes tea", "fact", "explicit", origin=ORIGIN,
                       keep_separate=True, human=True)
    service.save("ada", "Ada takes the 8:10 train", "fact", "explicit")
    (first, second) = service.active("ada")
    assert first.origin == ORIGIN and second.origin is None
    listed = {m["content"]: m for m in service.list_memories("ada")["memories"]}
    assert listed["Ada: likes tea"]["origin"] == ORIGIN
    assert "origin" not in listed["Ada takes the 8:10 train"]
    again = service.save("ada", "ada: likes tea.", "fact", origin={"other": 1})
    assert again["status"] == "exists" and again["chunk_id"] == out["chunk_id"]
    assert service.active("ada")[0].origin == ORIGIN


def test_existing_finds_the_identical_memory_only(service: MemoryService) -> None:
    service.save("ada", "Deploys go out on Tuesdays", "fact")
    assert service.existing("ada", "deploys go out on tuesdays.") is not None
    assert service.existing("ada", "Deploys go out on Tuesdays", "project") is None
    assert service.existing("bo", "Deploys go out on Tuesdays") is None
    assert service.existing("ada", "Deploys go out on Thursdays") is None


@pytest.mark.parametrize(("origin", "message"), [
    ("text", "origin must be an object"),
    ({"x": float("nan")}, "origin is not plain JSON"),
    ({"x": object()}, "origin is not plain JSON"),
    ({"x": "y" * 16_001}, "the maximum is 16000"),
    ({"token": "ghp_" + "a1B2" * 9}, "origin"),
])
def test_a_bad_origin_is_refused(service: MemoryService, origin: object,
                                 message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        service.save("ada", "anything at all", "fact", origin=origin)
    assert service.active("ada") == []

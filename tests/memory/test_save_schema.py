"""Every key a save answers is declared in ``save_memory``'s output schema, whatever the
outcome, so a client reading the schema sees all of it."""

from __future__ import annotations

from typing import Any

from sediment.memory import MemoryService
from sediment.server.memory_tools import SaveOut


def _declared(model: type[SaveOut]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


def _check(out: dict[str, Any]) -> None:
    assert set(out) <= _declared(SaveOut), set(out) - _declared(SaveOut)
    SaveOut.model_validate(out)


def test_every_save_outcome_fits_the_schema(service: MemoryService) -> None:
    first = service.save("alice", "The user's dog is named Max.", "fact", scope="user")
    assert first["status"] == "created"
    _check(first)
    again = service.save("alice", "The user's dog is named Max.", "fact", scope="user")
    assert again["status"] == "exists"
    _check(again)
    fixed = service.save("alice", "Actually my dog's name is Rex, not Max.", "correction",
                         scope="user")
    _check(fixed)
    other = service.save("alice", "The user's cat is named Tom.", "fact", scope="user")
    _check(other)
    proposed = service.save("alice", "Releases are cut on Mondays.", "convention",
                            scope="global")
    assert proposed["status"] == "proposed"
    _check(proposed)

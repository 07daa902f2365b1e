"""Every memory tool's answer fits the output schema it declares in ``tools/list``: each key
is declared, and the answer validates against the model the schema comes from, for every
status of save and every action of manage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from mcp import Client
from sediment.server import build_server
from sediment.server.memory_tools import (
    ContextOut,
    ManageOut,
    MemoryOut,
    NearOut,
    RecallOut,
    SaveOut,
    UseOut,
    VersionOut,
)
from tests.conftest import files_workspace
from tests.mcp.conftest import make_store

OUTPUTS: dict[str, type[BaseModel]] = {"save_memory": SaveOut, "recall_memories": RecallOut,
                                       "manage_memory": ManageOut}


def _declared(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


def _undeclared(tool: str, out: dict[str, Any]) -> list[str]:
    """Keys of an answer, and of the memories inside it, that its model does not declare."""
    bad = [f"{tool}: {k}" for k in set(out) - _declared(OUTPUTS[tool])]
    if isinstance(out.get("memory"), dict):
        bad += [f"{tool}.memory: {k}" for k in set(out["memory"]) - _declared(MemoryOut)]
    for key, model in (("memories", MemoryOut), ("versions", VersionOut), ("near", NearOut),
                       ("contexts", ContextOut), ("use_history", UseOut)):
        for row in out.get(key) or []:
            bad += [f"{tool}.{key}: {k}" for k in set(row) - _declared(model)]
    return bad


def test_every_memory_tool_answers_what_it_declares(tmp_path: Path) -> None:
    server = build_server(files_workspace(make_store(tmp_path / "store"), "alice"))

    async def main() -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
        got: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
        with anyio.fail_after(60):
            async with Client(server) as c:
                listed = {t.name: t.output_schema for t in (await c.list_tools()).tools}

                async def run(tool: str, args: dict[str, Any]) -> dict[str, Any]:
                    r = await c.call_tool(tool, args)
                    assert not r.is_error, (tool, args, r.content)
                    got.append((tool, r.structured_content, listed.get(tool)))
                    return r.structured_content

                first = await run("save_memory", {"content": "Deploys go out on Tuesdays.",
                                                  "category": "convention"})
                await run("save_memory", {"content": "Deploys go out on Tuesdays.",
                                          "category": "convention"})
                fixed = await run("save_memory", {"content": "Deploys go out on Thursdays.",
                                                  "category": "correction",
                                                  "supersedes": first["id"]})
                await run("save_memory", {"content": "Use uv, never pip, in this repo.",
                                          "category": "preference", "scope": "global"})
                await run("save_memory", {"content": "The billing service owns invoices.",
                                          "category": "fact", "scope": "user"})
                await run("recall_memories", {"query": "when do deploys go out",
                                              "min_score": 0.0})
                await run("manage_memory", {"action": "list"})
                await run("manage_memory", {"action": "history", "memory_id": fixed["id"]})
                await run("manage_memory", {"action": "restore", "memory_id": first["id"]})
                changed = await run("manage_memory", {
                    "action": "update", "memory_id": fixed["id"],
                    "updates": {"content": "Deploys go out on Fridays."}})
                await run("manage_memory", {"action": "delete", "memory_id": changed["id"]})
                await run("manage_memory", {"action": "forget_all", "confirm": True})
        return got

    answers = anyio.run(main)
    assert {tool for tool, _, _ in answers} == set(OUTPUTS)
    bad: list[str] = []
    for tool, out, schema in answers:
        bad += _undeclared(tool, out)
        OUTPUTS[tool].model_validate(out)
        assert schema is not None and set(schema["properties"]) == _declared(OUTPUTS[tool])
    assert not bad, "\n".join(sorted(set(bad)))

"""Every context tool's answer fits the output schema it declares in ``tools/list``: each
key is declared, and the answer validates against the model the schema comes from."""

from __future__ import annotations

from typing import Any

import anyio
from pydantic import BaseModel

from mcp import Client
from sediment.server.context_outputs import Item
from sediment.server.context_tools import OUTPUTS
from tests.context.test_mcp_loop import TIMEOUT, TOOLS, server

__all__ = ["server"]


def _declared(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


def test_every_context_tool_answers_what_it_declares(server: Any) -> None:
    assert set(OUTPUTS) == TOOLS

    async def main() -> dict[str, tuple[dict[str, Any], dict[str, Any] | None]]:
        got: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as c:
                listed = {t.name: t.output_schema for t in (await c.list_tools()).tools}

                async def run(tool: str, args: dict[str, Any]) -> dict[str, Any]:
                    r = await c.call_tool(tool, args)
                    assert not r.is_error, (tool, r.content)
                    got[tool] = (r.structured_content, listed.get(tool))
                    return r.structured_content

                stored = await run("store_context", {"content": "Use uv to install.",
                                                     "context_type": "skill"})
                await run("store_iteration_result", {"iteration": 1, "summary": "tried pip",
                                                     "success": False, "error": "no wheel"})
                await run("get_relevant_context", {"query": "install", "max_tokens": 200,
                                                   "min_score": 0.0})
                await run("mark_useful", {"item_id": stored["id"], "helpful": True})
                await run("get_iteration_history", {})
                await run("get_skills", {"min_score": 0.0})
                await run("summarize_old_context", {"older_than_iterations": 1})
                await run("prune_low_value_context", {"min_score": 0.0})
                await run("get_context_stats", {})
                await run("health_check", {})
        return got

    answers = anyio.run(main)
    assert set(answers) == TOOLS
    for tool, (out, schema) in answers.items():
        model = OUTPUTS[tool]
        assert set(out) <= _declared(model), (tool, set(out) - _declared(model))
        model.model_validate(out)
        assert schema is not None and set(schema["properties"]) == _declared(model), tool
    for row in answers["get_iteration_history"][0]["iterations"]:
        assert set(Item.model_fields) <= set(row)

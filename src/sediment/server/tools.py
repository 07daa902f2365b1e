"""MCP tools whose input is one of the service's strict request models.

The SDK derives a tool's input schema and argument validation from the function's
signature, with pydantic's lax mode (``true`` is accepted as the integer 1, ``"0.5"`` as a
number) and after decoding JSON found inside strings; unknown arguments are dropped. Its
``add_tool`` takes only a function, so a tool built here is a ``Tool`` whose input schema
is the request model's JSON schema and whose arguments reach the model exactly as sent:
:func:`sediment.ops.requests.parse` validates them strictly and a bad call comes back as
one ``isError`` result naming each field and rule. Pass such tools to ``MCPServer(tools=)``
(``build_server`` does; other modules contribute theirs through its ``tools`` argument).

Every tool built here first checks that its caller may call it: the permission comes from
``sediment.auth.roles`` (the one role table), the caller from the HTTP request's bearer
token, else the server's own actor (the workspace's) as a writer (stdio).
:func:`actor_tool` also hands the caller to the handler, for tools whose answers depend
on who asks (memory, context).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, model_validator

from sediment.auth import Principal
from sediment.auth.roles import tool_permission
from sediment.errors import SedimentError
from sediment.ops.requests import parse
from sediment.server.disclosure import mcp_message
from sediment.server.principals import tool_principal

__all__ = ["APPEND_ONLY", "LEGACY_TOOL_NAMES", "READ_ONLY", "actor_tool", "result",
           "strict_tool"]

LEGACY_TOOL_NAMES = {"agents.search": "agents_search",
                     "agents.context.write": "agents_context_write",
                     "agents.context.propose": "agents_context_propose"}
"""The RFC's dotted tool names, which a server "MAY also accept": accepted when called (MCP
and ``POST /tools/NAME``), not listed (a listing costs every client tokens, and dots break
clients that allow only [a-zA-Z0-9_-])."""

M = TypeVar("M", bound=BaseModel)

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
APPEND_ONLY = ToolAnnotations(read_only_hint=False, destructive_hint=False,
                              idempotent_hint=False, open_world_hint=False)


class _AsSent(ArgModelBase):
    """The call's arguments as one dict, untouched (no coercion, no JSON found in strings
    decoded): the tool validates them with its request model. This is the SDK's own
    argument-model hook; nothing of the SDK is overridden."""

    arguments: dict[str, Any]

    @model_validator(mode="before")
    @classmethod
    def _whole(cls, data: Any) -> Any:
        return {"arguments": data}


def result(structured: dict[str, Any], text: str) -> CallToolResult:
    """A tool result with the service's response as structured content and ``text`` for
    clients that only show text."""
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured)


def strict_tool(name: str, model: type[M], handler: Callable[[M], CallToolResult], *,
                output: type[BaseModel], description: str, annotations: ToolAnnotations,
                actor: str) -> Tool:
    """A tool named ``name`` taking ``model``'s fields as its arguments and returning a
    result whose structured content ``output`` describes; ``actor`` is the server's own
    (whose permission a call without a bearer token is checked with)."""
    return actor_tool(name, model, lambda request, _: handler(request), output=output,
                      description=description, annotations=annotations, actor=actor)


def actor_tool(name: str, model: type[M], handler: Callable[[M, Principal], CallToolResult],
               *, output: type[BaseModel], description: str, annotations: ToolAnnotations,
               actor: str) -> Tool:
    """:func:`strict_tool` whose handler also gets the caller: the bearer token's
    principal, else ``actor`` (the server's own) as a writer."""

    def call(arguments: dict[str, Any], ctx: Context | None = None) -> CallToolResult:
        who = tool_principal(ctx, actor)
        try:
            who.require(tool_permission(name, arguments), f"tool {name}")
            return handler(parse(model, arguments), who)
        except SedimentError as exc:
            raise ToolError(mcp_message(exc)) from exc

    return Tool(fn=call, name=name, title=None, description=" ".join(description.split()),
                parameters=model.model_json_schema(),
                fn_metadata=FuncMetadata(arg_model=_AsSent, output_model=output),
                is_async=False, context_kwarg="ctx", annotations=annotations)

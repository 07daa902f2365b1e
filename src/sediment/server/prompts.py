"""Personas as MCP prompts, the store as personas see it, and tool scoping.

MCP prompt messages have only the roles ``user`` and ``assistant`` (the official SDK's
``Message``), so ``prompts/get`` carries a persona's system text as the first message,
role ``user``, its text starting with :data:`SYSTEM_HEADER`; the persona's own messages
follow (a ``system`` message among them is sent the same way). The prompt's description is
the persona's. Clients that take system instructions (the HTTP API) get ``system`` apart.

Only the SDK's public API is used: the server's own ``list_tools``/``list_prompts`` and a
server middleware (:func:`unknown_prompt_guard`) that answers ``prompts/get`` for a name
the server does not have.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar, cast

import anyio
import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Message, Prompt, PromptArgument
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from sediment.agents import Definition, PersonaContext, Registry, Resolved, load_registry
from sediment.errors import ConfigError, NotFoundError, RequestError, SedimentError
from sediment.ops.requests import SearchOptions, parse
from sediment.ops.service import ContextService
from sediment.server.disclosure import public_message
from sediment.store import LayerName

__all__ = ["SYSTEM_HEADER", "ServiceContext", "add_prompts", "prompt_messages", "scope_tools",
           "serve_personas", "tool_names", "unknown_prompt_guard"]

SYSTEM_HEADER = "[System instructions for this conversation]\n"
_HIT_FIELDS = ("id", "layer", "kind", "content", "score", "confidence", "sources")
_T = TypeVar("_T")


class ServiceContext(PersonaContext):
    """``context.search/get/sources`` over a :class:`ContextService`. Search options are
    the search tool's (strict: a bad option is an error naming it); ``mode = "keyword"``
    is accepted for ``"lexical"``."""

    def __init__(self, service: ContextService) -> None:
        self.service = service

    def search(self, opts: Mapping[str, Any]) -> list[dict[str, Any]]:
        data = dict(opts)
        if data.get("mode") == "keyword":
            data["mode"] = "lexical"
        out = self.service.search(parse(SearchOptions, data))
        return [{k: r[k] for k in _HIT_FIELDS} for r in out["results"]]

    def get(self, chunk_id: int) -> dict[str, Any] | None:
        try:
            chunk = self.service.read_chunk(chunk_id)
        except NotFoundError:
            return None
        chunk.pop("hidden_versions", None)
        return chunk

    def sources(self) -> list[dict[str, Any]]:
        out = []
        for name in LayerName:
            layer = self.service.layerset.layer(name)
            if layer is not None:
                out.append({"name": name.value, "path": str(layer.path),
                            "chunks": layer.file.chunk_count})
        return out


def prompt_messages(resolved: Resolved) -> list[Message]:
    """The MCP messages of a resolved persona (see the module docstring)."""
    out = [Message(SYSTEM_HEADER + resolved.system, role="user")]
    for m in resolved.messages:
        role = m.role if m.role in ("user", "assistant") else "user"
        text = SYSTEM_HEADER + m.content if m.role == "system" else m.content
        out.append(Message(text, role=role))
    return out


class _PersonaPrompt(Prompt):
    """Arguments are checked by the persona (so a missing one is an invalid-params error
    naming it, not the SDK's internal error); resolving runs on a worker thread."""

    async def render(self, arguments: dict[str, Any] | None,
                     context: Any) -> list[Message]:
        del context
        def call() -> list[Message]:
            return cast(list[Message], self.fn(**(arguments or {})))

        return await anyio.to_thread.run_sync(call)


def add_prompts(server: MCPServer, registry: Registry, context: PersonaContext) -> None:
    """Every persona as a prompt: ``prompts/get`` resolves it (errors name the persona)."""

    def renderer(name: str) -> Any:
        def render(**arguments: Any) -> list[Message]:
            try:
                return prompt_messages(registry.resolve(name, arguments, context))
            except RequestError as exc:
                raise MCPError(INVALID_PARAMS, public_message(exc)) from exc
            except SedimentError as exc:
                raise MCPError(INTERNAL_ERROR, public_message(exc)) from exc
        return render

    taken = {p.name for p in _listed(server.list_prompts)}
    for info in registry.list():
        if info.name in taken:
            raise ConfigError(f"persona {info.name}: the server already has a prompt of that "
                              "name; choose another name for the persona")
        server.add_prompt(_PersonaPrompt(
            name=info.name, title=None, description=info.description, fn=renderer(info.name),
            context_kwarg=None,
            arguments=[PromptArgument(name=a.name, description=a.description or None,
                                      required=a.required) for a in info.arguments]))


def _listed(listing: Callable[[], Awaitable[list[_T]]]) -> list[_T]:
    """Run one of the server's listings (coroutines that never wait) while the server is
    being built, outside any event loop."""
    return anyio.run(listing)


def tool_names(server: MCPServer) -> list[str]:
    """The names of the tools ``server`` registered, in order."""
    return [t.name for t in _listed(server.list_tools)]


def unknown_prompt_guard(server: Callable[[], MCPServer]) -> Any:
    """A server middleware: ``prompts/get`` for a name the server has no prompt for is an
    invalid-params error naming it and the prompts there are (the SDK answers an internal
    error that names neither). ``server`` returns the server the middleware is given to,
    which exists only after the middleware does."""

    async def guard(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        name = ctx.params.get("name") if ctx.params is not None else None
        if ctx.method == "prompts/get" and isinstance(name, str):
            names = sorted(p.name for p in await server().list_prompts())
            if name not in names:
                raise MCPError(INVALID_PARAMS, f"unknown prompt {name[:64]!r}; the prompts are: "
                                               f"{', '.join(names) or 'none'}")
        return await call_next(ctx)

    return guard


def scope_tools(server: MCPServer, keep: Collection[str]) -> None:
    """Remove every tool not in ``keep`` (``sediment serve --agent``)."""
    for name in tool_names(server):
        if name not in keep:
            server.remove_tool(name)


def serve_personas(server: MCPServer, service: ContextService,
                   definitions: Iterable[Definition], *,
                   agent: str | None = None) -> tuple[Registry, ServiceContext]:
    """Load the personas against ``server``'s tools, add them as prompts, and with
    ``agent`` keep only that persona's tools."""
    registry = load_registry(definitions, tool_names(server))
    context = ServiceContext(service)
    add_prompts(server, registry, context)
    if agent is not None:
        scope_tools(server, registry.find(agent).info.tools)
    return registry, context

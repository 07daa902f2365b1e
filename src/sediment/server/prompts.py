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
from contextvars import ContextVar
from typing import Any, TypeVar, cast

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Message, Prompt, PromptArgument
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import Field

from sediment.agents import (
    BrokenPersona,
    Definition,
    PersonaContext,
    Registry,
    Resolved,
    load_registry,
)
from sediment.errors import NotFoundError, RequestError, SedimentError
from sediment.ops.requests import GetRequest, SearchOptions, SourcesRequest, parse
from sediment.ops.service import ContextService
from sediment.server.disclosure import mcp_message
from sediment.server.principals import tool_principal
from sediment.workspace import Workspace

__all__ = ["PERSONA_THREADS", "SYSTEM_HEADER", "ServiceContext", "add_prompts",
           "prompt_messages", "resolve_off_loop", "scope_tools", "serve_personas",
           "tool_names", "unknown_prompt_guard"]

SYSTEM_HEADER = "[System instructions for this conversation]\n"
_HIT_FIELDS = ("id", "layer", "kind", "content", "score", "confidence", "sources")
_T = TypeVar("_T")


class ServiceContext(PersonaContext):
    """``context.search/get/sources`` over a :class:`ContextService`: the services of the
    ``agents_search``, ``agents_get`` and ``agents_sources`` tools. Search options are the
    search tool's (strict: a bad option is an error naming it), with the personas
    specification's spellings: ``limit`` for ``k`` and ``mode = "keyword"`` for
    ``"lexical"``; ``filters.source`` selects a source by name or path prefix."""

    def __init__(self, service: ContextService, actor: str | None = None) -> None:
        self.service, self.actor = service, actor

    def as_actor(self, actor: str) -> ServiceContext:
        """The same store as ``actor`` may read it: a persona rendered for a caller reads
        what that caller's own search would (``sediment.store.rules``), never more."""
        return ServiceContext(self.service, actor)

    def search(self, opts: Mapping[str, Any]) -> list[dict[str, Any]]:
        data = dict(opts)
        if "limit" in data:
            if "k" in data:
                raise RequestError("give k or limit (the same option), not both")
            data["k"] = data.pop("limit")
        if data.get("mode") == "keyword":
            data["mode"] = "lexical"
        if data.get("filters") == []:
            data["filters"] = {}
        out = self.service.search(parse(SearchOptions, data), self.actor)
        return [{k: r[k] for k in _HIT_FIELDS} for r in out["results"]]

    def get(self, chunk_id: int) -> dict[str, Any] | None:
        try:
            return self.service.get(parse(GetRequest, {"id": chunk_id}), self.actor)
        except NotFoundError:
            return None

    def sources(self) -> list[dict[str, Any]]:
        layers: list[dict[str, Any]] = self.service.sources(SourcesRequest(),
                                                            self.actor)["layers"]
        return layers


def prompt_messages(resolved: Resolved) -> list[Message]:
    """The MCP messages of a resolved persona (see the module docstring)."""
    out = [Message(SYSTEM_HEADER + resolved.system, role="user")]
    for m in resolved.messages:
        role = m.role if m.role in ("user", "assistant") else "user"
        text = SYSTEM_HEADER + m.content if m.role == "system" else m.content
        out.append(Message(text, role=role))
    return out


PERSONA_THREADS = 16
"""Threads resolving personas at once, apart from the pool every other request uses."""
_persona_limiter: RunVar[anyio.CapacityLimiter] = RunVar("sediment_persona_limiter")


async def resolve_off_loop(fn: Callable[[], _T]) -> _T:
    """``fn()`` (a persona resolution) on a thread of its own limiter, so personas can
    never take the threads searches and writes run on; a cancelled request (a client
    gone, a server stopping) stops waiting for it, and the persona's own limit ends it."""
    try:
        limiter = _persona_limiter.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(PERSONA_THREADS)
        _persona_limiter.set(limiter)
    return await anyio.to_thread.run_sync(fn, limiter=limiter, abandon_on_cancel=True)


_PROMPT_CALLER: ContextVar[str] = ContextVar("sediment_prompt_caller")
"""The actor a persona prompt is being rendered for (copied into the resolving thread)."""


class _PersonaPrompt(Prompt):
    """Arguments are checked by the persona (so a missing one is an invalid-params error
    naming it, not the SDK's internal error); resolving runs off the event loop, as the
    caller (the bearer token's actor, else the server's own, ``actor``)."""

    actor: str = Field(exclude=True)

    async def render(self, arguments: dict[str, Any] | None,
                     context: Any) -> list[Message]:
        caller = tool_principal(context, self.actor).actor

        def call() -> list[Message]:
            _PROMPT_CALLER.set(caller)
            return cast(list[Message], self.fn(**(arguments or {})))

        return await resolve_off_loop(call)


def add_prompts(server: MCPServer, registry: Registry, context: ServiceContext,
                actor: str) -> None:
    """Every persona as a prompt: ``prompts/get`` resolves it as the caller, else as
    ``actor`` (the server's own); errors name the persona. One whose name another prompt
    has is marked broken in ``registry``."""

    def renderer(name: str) -> Any:
        def render(**arguments: Any) -> list[Message]:
            reader = context.as_actor(_PROMPT_CALLER.get(actor))
            try:
                return prompt_messages(registry.resolve(name, arguments, reader))
            except RequestError as exc:
                raise MCPError(INVALID_PARAMS, mcp_message(exc)) from exc
            except SedimentError as exc:
                raise MCPError(INTERNAL_ERROR, mcp_message(exc)) from exc
        return render

    taken = {p.name for p in _listed(server.list_prompts)}
    for info in registry.list():
        if info.name in taken:
            registry.set_broken(BrokenPersona(
                info.name, info.source, info.origin,
                f"persona {info.name}: the server already has a prompt of that name; choose "
                "another name for the persona"))
            continue
        server.add_prompt(_PersonaPrompt(
            name=info.name, title=None, description=info.description, fn=renderer(info.name),
            context_kwarg=None, actor=actor,
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


def serve_personas(server: MCPServer, workspace: Workspace,
                   definitions: Iterable[Definition], *,
                   agent: str | None = None) -> tuple[Registry, ServiceContext]:
    """Load the personas against ``server``'s tools, add them as prompts over
    ``workspace``'s search service (a caller without a token is the workspace's actor),
    and with ``agent`` keep only that persona's tools (an error if that one failed to
    load); the others that failed are in ``registry.broken()`` for the caller to report."""
    registry = load_registry(definitions, tool_names(server))
    context = ServiceContext(workspace.service)
    add_prompts(server, registry, context, workspace.actor)
    if agent is not None:
        scope_tools(server, registry.find(agent).info.tools)
    return registry, context

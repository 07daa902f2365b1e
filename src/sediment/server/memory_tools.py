"""MCP tools ``save_memory``, ``recall_memories``, ``manage_memory`` and the prompt
``memory_guidelines`` (docs/memory.md).

Arguments are validated strictly (pydantic ``strict=True, extra="forbid"``): a string
where a number belongs, an unknown argument, an unknown category or a limit out of range
is an ``isError`` result naming the field, before anything runs. The actor is the one
bound to the HTTP request's bearer token, else the server's own actor (``SEDIMENT_ACTOR``
or the OS user). Use counts are flushed every ``SEDIMENT_MEMORY_FLUSH_SECONDS`` (default
30) and when the process exits.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Literal, cast

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from sediment.auth import Principal
from sediment.errors import SedimentError
from sediment.memory import (
    MAX_LIMIT,
    MEMORY_GUIDELINES,
    FileMemoryStore,
    MemoryService,
)
from sediment.ops.service import ContextService
from sediment.server.lifecycle import on_shutdown
from sediment.server.principals import (
    data_dir,
    default_actor,
    memory_threshold,
    tool_principal,
)

Category = Literal["preference", "pattern", "correction", "fact", "instruction", "convention"]
Source = Literal["explicit", "inferred", "corrected"]
SaveScope = Literal["user", "project", "global"]
RecallScope = Literal["user", "project", "global"]
Action = Literal["list", "delete", "update", "forget_all"]
STRICT = ConfigDict(strict=True, extra="forbid", arbitrary_types_allowed=True)
DEFAULT_FLUSH_SECONDS = 30.0


class MemoryUpdates(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    content: str | None = Field(default=None, min_length=1, description="New text")
    category: Category | None = Field(default=None, description="New category")
    confidence: float | None = Field(default=None, ge=0.0, le=1.0,
                                     description="New confidence, 0.0 to 1.0")


class MemoryOut(BaseModel):
    id: str
    content: str
    category: str
    scope: str
    confidence: float
    source: str
    created_at_ms: int
    use_count: int
    last_used_ms: int | None
    context: str | None
    related_to: list[str]
    score: float | None = None


class SaveOut(BaseModel):
    status: str = Field(description="created, updated (superseded an older memory) or "
                                    "proposed (a global memory awaiting a human)")
    id: str
    superseded_id: str | None = None
    similarity: float | None = None
    looks_like_correction: bool | None = None


class RecallOut(BaseModel):
    query: str
    memories: list[MemoryOut]


class ManageOut(BaseModel):
    action: str
    status: str | None = None


def memory_service_for(service: ContextService,
                       env: Mapping[str, str] | None = None) -> MemoryService:
    """The memory service over the project's layers and the actors' own stores."""
    env = os.environ if env is None else env
    threshold = memory_threshold(env)
    profile = service.embedder.profile
    store = FileMemoryStore(service.layerset, data_dir(env), profile=profile.to_dict(),
                            dim=profile.dim, embedder_metadata=service.embedder.metadata())
    layerset = service.layerset
    return MemoryService(store, service.embedder, dedup_threshold=threshold,
                         chunk_exists=lambda cid: layerset.get(cid) is not None)


def _call(fn: Any, *args: Any, **kw: Any) -> dict[str, Any]:
    try:
        out: dict[str, Any] = fn(*args, **kw)
    except SedimentError as exc:
        raise ToolError(str(exc)) from exc
    return out


def _need(principal: Principal, role: str, what: str) -> None:
    if not principal.can(role):
        raise ToolError(f"{what} needs the {role} role; the token of actor "
                        f"{principal.actor!r} has the {principal.role} role")


def _line(i: int, m: Mapping[str, Any]) -> str:
    used = f", used {m['use_count']}x" if m.get("use_count") else ""
    ctx = f", context {m['context']}" if m.get("context") else ""
    head = (f"{i}. [{m['id']} {m['category']}, {m['scope']}, confidence "
            f"{m['confidence']:.2f}{used}{ctx}]")
    return f"{head}\n{m['content']}"


def _result(out: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=out)


def _make_strict(server: MCPServer, name: str) -> None:
    """Swap the SDK's lenient argument model for a strict one (no coercion, no unknown
    arguments). The SDK has no public switch for this; tests/memory/test_mcp.py checks
    that it still takes effect."""
    tool = server._tool_manager.get_tool(name)
    if tool is None:
        raise RuntimeError(f"tool {name} was not registered")
    base = tool.fn_metadata.arg_model
    strict = cast(type[ArgModelBase], type(base.__name__, (base,), {
        "model_config": STRICT, "__module__": base.__module__}))
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)


def add_memory_tools(server: MCPServer, service: ContextService, *,
                     memory: MemoryService | None = None,
                     actor: str | None = None) -> MemoryService:
    """Register the memory tools and prompt on ``server``; return the memory service."""
    mem = memory or memory_service_for(service)
    own = actor or default_actor()

    def save_memory(
        content: Annotated[str, Field(min_length=1, max_length=10_000, description=(
            "The memory: one specific, self-contained fact in present tense."))],
        category: Annotated[Category, Field(description=(
            "preference, pattern, correction, fact, instruction or convention"))],
        source: Annotated[Source, Field(description=(
            "explicit (asked to remember, confidence 1.0), corrected (0.9) or inferred "
            "(0.7)"))] = "inferred",
        scope: Annotated[SaveScope, Field(description=(
            "user (follows the person everywhere), project (this repository), or global "
            "(becomes a proposal for a human)"))] = "user",
        context: Annotated[str | None, Field(max_length=100, description=(
            "Name of a memory context to file it under (created on first use)"))] = None,
        related_to: Annotated[list[int | str] | None, Field(max_length=64, description=(
            "Chunk ids, KCP unit ids or 'path:line' references it relates to"))] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, SaveOut]:
        """Save a memory that persists across sessions: a preference, a correction, a
        convention, a fact, an instruction or an observed pattern. A near-duplicate of one
        of your memories in the same scope replaces it (status updated, with both ids, the
        similarity and whether it looks like a correction). Never include secrets."""
        who = tool_principal(ctx, own)
        _need(who, "writer", "save_memory")
        out = _call(mem.save, who.actor, content, category, source, scope, context,
                    related_to)
        if out["status"] == "updated":
            kind = "a correction of" if out["looks_like_correction"] else "a restatement of"
            text = (f"Updated: saved {out['id']}, superseding {out['superseded_id']} "
                    f"(similarity {out['similarity']:.2f}; looks like {kind} it).")
        elif out["status"] == "proposed":
            text = f"Proposed {out['id']} as a global memory; a human will review it."
        else:
            text = f"Created memory {out['id']} ({out['category']}, {out['scope']} scope)."
        return _result(out, text)

    def recall_memories(
        query: Annotated[str, Field(min_length=1, max_length=2_000, description=(
            "What you are looking for, e.g. 'how the user likes tests written'"))],
        category: Annotated[Category | None, Field(description="Only this category")] = None,
        scope: Annotated[RecallScope | None, Field(description="Only this scope")] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description=(
            f"How many memories, 1 to {MAX_LIMIT}"))] = 10,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, RecallOut]:
        """Find your memories relevant to a task: your user memories, this project's, and
        global ones; best first (hybrid relevance, then confidence, then recency).
        Superseded and deleted memories never appear. Each result counts as a use."""
        who = tool_principal(ctx, own)
        out = _call(mem.recall, who.actor, query, category, scope, limit)
        rows = out["memories"]
        text = "\n".join(_line(i, m) for i, m in enumerate(rows, 1)) or "No memories match."
        return _result(out, text)

    def manage_memory(
        action: Annotated[Action, Field(description="list, delete, update or forget_all")],
        memory_id: Annotated[str | None, Field(description=(
            "The memory's id (e.g. u12 or p34); for delete and update"))] = None,
        updates: Annotated[MemoryUpdates | None, Field(description=(
            "For update: any of content, category, confidence"))] = None,
        category: Annotated[Category | None, Field(description="For list: only this "
                                                               "category")] = None,
        limit: Annotated[int | None, Field(ge=1, le=1000, description=(
            "For list: how many (default 20)"))] = None,
        confirm: Annotated[bool, Field(description=(
            "Must be true for forget_all, which forgets all your memories here"))] = False,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ManageOut]:
        """List your memories (most used first, with their contexts), delete one (gone
        from recall at once), update one (a new version that keeps its context and
        relationships), or forget_all of yours in this project (needs confirm: true)."""
        who = tool_principal(ctx, own)
        if action != "list":
            _need(who, "writer", f"manage_memory {action}")
        changes = updates.model_dump(exclude_none=True) if updates is not None else None
        out = _call(mem.manage, who.actor, action, memory_id, changes, category, limit,
                    confirm)
        if action == "list":
            rows = out["memories"]
            text = "\n".join(_line(i, m) for i, m in enumerate(rows, 1)) or "No memories."
        elif action == "update":
            text = f"Updated: {out['id']} supersedes {out['superseded_id']}."
        elif action == "delete":
            text = f"Deleted {out['id']}."
        else:
            text = f"Forgot {out['forgotten']} memories."
        return _result(out, text)

    # recall never changes a memory; the use it counts is bookkeeping, batched in memory.
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                idempotent_hint=False, open_world_hint=False)
    for name, fn, notes in (
        ("save_memory", save_memory, ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=False,
            open_world_hint=False)),
        ("recall_memories", recall_memories, read_only),
        ("manage_memory", manage_memory, ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=False,
            open_world_hint=False)),
    ):
        server.add_tool(fn, name=name, description=" ".join((fn.__doc__ or "").split()),
                        annotations=notes)
        _make_strict(server, name)

    @server.prompt(name="memory_guidelines",
                   description="When to recall and save memories, how to write them, the "
                               "categories, and what never to save.")
    def memory_guidelines() -> str:
        return MEMORY_GUIDELINES

    try:
        interval = float(os.environ.get("SEDIMENT_MEMORY_FLUSH_SECONDS",
                                        DEFAULT_FLUSH_SECONDS))
    except ValueError:
        interval = DEFAULT_FLUSH_SECONDS
    mem.start_flusher(interval)
    on_shutdown(mem.close)
    return mem

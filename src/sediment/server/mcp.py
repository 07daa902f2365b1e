"""The MCP server: the RFC's read/write tools and layer/chunk resources (RFC 10 to 12).

Built with the official SDK's ``MCPServer``. Each tool's input schema is a request model of
``sediment.ops.requests`` and its arguments are validated by that model, strictly; a bad
call raises ``ToolError`` with a message naming the field and the rule, so it comes back as
``isError`` for the model to read and the server keeps serving.

Resource URIs (documented in the README):

- ``agentsdb://layers/{layer}``: a layer's summary (path, counts, profile, first ids) as
  its reader may read it (the local layer: their own notes only; listed: the shared layers)
- ``agentsdb://chunks/{id}``: a chunk as precedence resolves it, with hidden versions
- ``agentsdb://layers/{layer}/chunks/{id}``: one layer's version of a chunk
- ``knowledge://{project}``: a KCP manifest; ``knowledge://{project}/{unit_id}``: a unit's file
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult

from sediment import __version__
from sediment.auth import Principal
from sediment.errors import SedimentError, ValidationError
from sediment.format.ids import parse_chunk_id
from sediment.ops.requests import (
    GetRequest,
    KnowledgeRequest,
    ProposeRequest,
    SearchParams,
    SourcesRequest,
    WriteRequest,
)
from sediment.ops.responses import (
    DocumentOut,
    KnowledgeOut,
    ProposeOut,
    SearchOut,
    SourcesOut,
    WriteOut,
)
from sediment.ops.service import ContextService
from sediment.server.context_tools import context_loop_tools
from sediment.server.disclosure import mcp_message
from sediment.server.lifecycle import on_shutdown
from sediment.server.memory_tools import add_memory_prompt, memory_tools
from sediment.server.principals import tool_principal
from sediment.server.prompts import unknown_prompt_guard
from sediment.server.tools import (
    APPEND_ONLY,
    LEGACY_TOOL_NAMES,
    READ_ONLY,
    actor_tool,
    result,
)
from sediment.workspace import Workspace

INSTRUCTIONS = """\
Sediment serves a layered context store (AGENTS.db). Search it with agents_search before
answering questions about this project. Record what you learn with agents_context_write
(scope "local" for session notes, "delta" for findings worth a human's review), citing
sources as "path:line" or chunk ids, with an honest confidence. Propose a delta chunk for
promotion to the human-governed user layer with agents_context_propose. The base layer is
canonical: where a result reports conflicts, the higher layer overrides the lower."""


def _render_search(out: dict[str, Any]) -> str:
    rows = out["results"]
    if not rows:
        return f"No results in layers {', '.join(out['layers']) or '(none present)'}."
    lines = []
    for i, r in enumerate(rows, 1):
        src = ", ".join(str(s) for s in r["sources"][:3])
        lines.append(f"{i}. [{r['layer']} #{r['id']} {r['kind']}, confidence "
                     f"{r['confidence']:.2f}, score {r['score']:.4f}]"
                     + (f" sources: {src}" if src else ""))
        lines.append(r["content"].strip())
        for c in r["conflicts"]:
            lines.append(f"   conflict: overrides {c['layer']} version: "
                         f"{' '.join(c['content'].split())[:200]}")
        lines.append("")
    return "\n".join(lines).rstrip()


def context_tools(service: ContextService, actor: str) -> list[Tool]:
    """The RFC's tools under their underscore names, and KCP's ``search_knowledge``; the
    dotted names (``agents.search``, ...) are accepted when called
    (:func:`legacy_tool_names`), never listed. ``actor`` is the server's own, whom a call
    without a bearer token acts as."""

    def search(params: SearchParams, who: Principal) -> CallToolResult:
        out = service.search(params, who.actor)
        return result(out, _render_search(out))

    def write(request: WriteRequest, who: Principal) -> CallToolResult:
        out = service.write(request, who.actor)
        return result(out, f"Wrote chunk {out['id']} to the {out['layer']} layer.")

    def propose(request: ProposeRequest, who: Principal) -> CallToolResult:
        out = service.propose(request, who.actor)
        verb = "Already proposed" if out["already_pending"] else "Proposed"
        return result(out, f"{verb}: chunk {out['context_id']} for the user layer "
                           f"(proposal {out['proposal_id']}); a human will review it.")

    def get(request: GetRequest, who: Principal) -> CallToolResult:
        out = service.get(request, who.actor)
        return result(out, _render_document(out))

    def sources(request: SourcesRequest, who: Principal) -> CallToolResult:
        out = service.sources(request, who.actor)
        return result(out, _render_sources(out))

    def search_knowledge(request: KnowledgeRequest, who: Principal) -> CallToolResult:
        out = service.search_knowledge(request, who.actor)
        return result(out, _render_units(out))

    read: dict[str, Any] = {"annotations": READ_ONLY, "actor": actor}
    append: dict[str, Any] = {"annotations": APPEND_ONLY, "actor": actor}
    return [
        actor_tool("agents_search", SearchParams, search, output=SearchOut, **read,
                   description="""Search the layered context store (hybrid vector + keyword,
                   precedence local > user > delta > base). Results carry their layer, score,
                   provenance and any conflicting lower-layer versions."""),
        actor_tool("agents_context_write", WriteRequest, write, output=WriteOut, **append,
                   description="""Append a chunk to the local or delta layer (append-only;
                   author is recorded as mcp). Base and user are not writable by agents.
                   Returns the new chunk id."""),
        actor_tool("agents_context_propose", ProposeRequest, propose, output=ProposeOut,
                   **append, description="""Propose a local or delta chunk for promotion to
                   the user layer. A human accepts or rejects it; the proposal is recorded in
                   the delta layer."""),
        actor_tool("agents_get", GetRequest, get, output=DocumentOut, **read,
                   description="""Read a chunk by id (as precedence resolves it) with the
                   whole source document it came from: title, body (the document's chunks in
                   line order), path, and the document's chunks with their layers."""),
        actor_tool("agents_sources", SourcesRequest, sources, output=SourcesOut, **read,
                   description="""List the layers present and the source documents they
                   were compiled from (path, source name, number of chunks, layers)."""),
        actor_tool("search_knowledge", KnowledgeRequest, search_knowledge, output=KnowledgeOut,
                   **read, description="""Find knowledge units (KCP knowledge.yaml) by
                   intent, trigger and content. Each result names the unit's resource URI, its
                   intent, the best matching chunk, and the units to read first (depends_on,
                   in order)."""),
    ]


def _render_document(out: dict[str, Any]) -> str:
    head = f"# {out['title']}" if out["title"] else f"Chunk {out['id']}"
    where = f" ({out['path']})" if out["path"] else ""
    cut = "\n[truncated]" if out["truncated"] else ""
    return f"{head}{where}\n[{out['layer']} #{out['id']} {out['kind']}]\n\n{out['body']}{cut}"


def _render_sources(out: dict[str, Any]) -> str:
    lines = []
    for la in out["layers"]:
        lines.append(f"{la['name']}: {la['chunks']} chunks, {len(la['documents'])} documents "
                     f"({la['path']})")
        lines += [f"- {d['path']} ({d['chunks']} chunks)" for d in la["documents"]]
    if out["truncated"]:
        lines.append("(more documents than are listed)")
    return "\n".join(lines) or "No layers present."


def build_server(workspace: Workspace, *, name: str = "sediment", tools: Iterable[Tool] = (),
                 flush_seconds: float | None = None) -> MCPServer:
    """A ready MCP server over ``workspace``; transports are chosen by the caller.

    The workspace gives the search service, the memory and progressive-context services
    (a team server's, or over files the project's), and the server's own actor: whom a
    call without a bearer token acts as. ``tools`` adds other modules' tools (built with
    :func:`sediment.server.tools.strict_tool`) to the RFC and KCP ones. ``flush_seconds``:
    how often the memory service writes batched use counts (the configuration's)."""
    service, memory, context = workspace.service, workspace.memory, workspace.context
    actor = workspace.actor
    server = MCPServer(name=name, version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING",
                       tools=[*context_tools(service, actor), *memory_tools(memory, actor=actor),
                              *context_loop_tools(context, actor), *tools],
                       middleware=[legacy_tool_names, unknown_prompt_guard(lambda: server)])

    def _reader(ctx: Context) -> str:
        """Who reads a resource: the bearer token's actor, else the server's own."""
        return tool_principal(ctx, actor).actor

    @server.resource("agentsdb://layers/{layer}", name="layer",
                     description="Summary of one layer: path, chunk count, embedding profile",
                     mime_type="application/json")
    def layer_resource(layer: str, ctx: Context) -> str:
        return _as_json(service.layer_summary, layer, _reader(ctx))

    @server.resource("agentsdb://chunks/{chunk_id}", name="chunk",
                     description="A chunk as precedence resolves it, with hidden versions",
                     mime_type="application/json")
    def chunk_resource(chunk_id: str, ctx: Context) -> str:
        return _as_json(service.read_chunk, _chunk_id(chunk_id), None, _reader(ctx))

    @server.resource("agentsdb://layers/{layer}/chunks/{chunk_id}", name="layer_chunk",
                     description="One layer's version of a chunk",
                     mime_type="application/json")
    def layer_chunk_resource(layer: str, chunk_id: str, ctx: Context) -> str:
        return _as_json(service.read_chunk, _chunk_id(chunk_id), layer, _reader(ctx))

    for layer_name in ("base", "user", "delta"):
        _add_layer_resource(server, service, layer_name)
    _add_knowledge(server, service)
    add_memory_prompt(server, memory, flush_seconds)
    on_shutdown(context.flush)  # access counts not yet carried by a write
    return server


async def legacy_tool_names(ctx: ServerRequestContext[Any, Any],
                            call_next: CallNext) -> HandlerResult:
    """A server middleware (the SDK's public way to rewrite a request before it is
    validated): ``tools/call`` of a dotted RFC name calls its underscore tool."""
    params = ctx.params
    if ctx.method == "tools/call" and params is not None:
        name = params.get("name")
        if isinstance(name, str) and name in LEGACY_TOOL_NAMES:
            ctx = replace(ctx, params={**params, "name": LEGACY_TOOL_NAMES[name]})
    return await call_next(ctx)


def _render_units(out: dict[str, Any]) -> str:
    if not out["units"]:
        return "No knowledge units match."
    lines = []
    for i, u in enumerate(out["units"], 1):
        lines.append(f"{i}. {u.get('uri')} ({u.get('path')}): {u.get('intent')}")
        if u.get("load_first"):
            lines.append(f"   read first: {', '.join(u['load_first'])}")
    return "\n".join(lines)


def _add_knowledge(server: MCPServer, service: ContextService) -> None:
    """KCP: the manifests and their units as ``knowledge://`` resources."""

    def read(uri: str) -> str:
        return _answer(lambda: service.knowledge.read_resource(uri).text)

    @server.resource("knowledge://{project}", name="knowledge manifest",
                     description="A project's KCP manifest (knowledge.yaml)",
                     mime_type="application/yaml")
    def manifest_resource(project: str) -> str:
        return read(f"knowledge://{project}")

    @server.resource("knowledge://{project}/{unit_id}", name="knowledge unit",
                     description="The file of one KCP knowledge unit")
    def unit_resource(project: str, unit_id: str) -> str:
        return read(f"knowledge://{project}/{unit_id}")

    try:
        listed = service.knowledge.list_resources()
    except SedimentError:
        listed = []
    for res in listed:
        _add_static(server, res.uri, res.name, res.description, res.mime_type, read)


def _add_static(server: MCPServer, uri: str, name: str, description: str, mime: str,
                read: Any) -> None:
    def fn() -> str:
        return str(read(uri))

    fn.__name__ = "knowledge_" + "".join(ch if ch.isalnum() else "_" for ch in uri)
    server.resource(uri, name=name, description=description, mime_type=mime)(fn)


def _chunk_id(raw: str) -> int:
    try:
        return parse_chunk_id(raw)
    except ValidationError as exc:
        raise ResourceError(mcp_message(exc)) from None


def _answer(read: Callable[[], str]) -> str:
    """A resource's text; a service error is the resource error the client reads."""
    try:
        return read()
    except SedimentError as exc:
        raise ResourceError(mcp_message(exc)) from exc


def _as_json(fn: Callable[..., Any], *args: Any) -> str:
    return _answer(lambda: json.dumps(fn(*args), ensure_ascii=False, indent=2))


def _add_layer_resource(server: MCPServer, service: ContextService, layer_name: str) -> None:
    """Each shared layer is also listed as a concrete resource, so clients show it. The
    local layer is not: its summary depends on who reads it (their own notes only), and
    the SDK gives a concrete resource no caller, so it is read through the template."""

    def read() -> str:
        return _as_json(service.layer_summary, layer_name, None)

    read.__name__ = f"{layer_name}_layer"
    server.resource(f"agentsdb://layers/{layer_name}", name=f"{layer_name} layer",
                    description=f"The {layer_name} layer's summary",
                    mime_type="application/json")(read)

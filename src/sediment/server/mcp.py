"""The MCP server: the RFC's read/write tools and layer/chunk resources (RFC 10 to 12).

Built with the official SDK's ``MCPServer``. Tools validate their input in the service
(``sediment.ops``) and raise ``ToolError`` with a message naming the field and the rule, so
a bad call comes back as ``isError`` for the model to read and the server keeps serving.

Resource URIs (documented in the README):

- ``agentsdb://layers/{layer}``: a layer's summary (path, counts, profile, first ids)
- ``agentsdb://chunks/{id}``: a chunk as precedence resolves it, with hidden versions
- ``agentsdb://layers/{layer}/chunks/{id}``: one layer's version of a chunk
- ``knowledge://{project}``: a KCP manifest; ``knowledge://{project}/{unit_id}``: a unit's file
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from sediment import __version__
from sediment.errors import NotFoundError, SedimentError
from sediment.ops.service import ContextService, SearchArgs
from sediment.ops.write import WriteRequest
from sediment.search import MAX_K
from sediment.server.memory_tools import add_memory_tools

INSTRUCTIONS = """\
Sediment serves a layered context store (AGENTS.db). Search it with agents_search before
answering questions about this project. Record what you learn with agents_context_write
(scope "local" for session notes, "delta" for findings worth a human's review), citing
sources as "path:line" or chunk ids, with an honest confidence. Propose a delta chunk for
promotion to the human-governed user layer with agents_context_propose. The base layer is
canonical: where a result reports conflicts, the higher layer overrides the lower."""


class ChunkOut(BaseModel):
    id: int
    layer: str
    score: float
    kind: str
    content: str
    author: str
    confidence: float
    created_at_ms: int
    sources: list[int | str]
    conflicts: list[dict[str, Any]] = Field(
        description="Lower-layer versions of this id with different content (RFC 12)")


class SearchOut(BaseModel):
    query: str | None
    layers: list[str]
    results: list[ChunkOut]


class WriteOut(BaseModel):
    id: int
    layer: str


class ProposeOut(BaseModel):
    proposal_id: int
    context_id: int
    from_layer: str
    copied_to_delta: bool
    already_pending: bool


class Filters(BaseModel):
    kind: list[str] | None = Field(default=None, description="Only chunks of these kinds")


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


def _result(structured: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured)


def _tool_call(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except SedimentError as exc:
        raise ToolError(str(exc)) from exc


def build_server(service: ContextService, *, name: str = "sediment") -> MCPServer:
    """A ready MCP server over ``service``; transports are chosen by the caller."""
    server = MCPServer(name=name, version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")

    def agents_search(
        query: Annotated[str | None, Field(
            description="What to look for (non-empty). Required unless query_vec is given.")
        ] = None,
        k: Annotated[int, Field(description=f"Number of results, 1 to {MAX_K}.")] = 10,
        filters: Annotated[Filters | None, Field(
            description="Filters, e.g. {\"kind\": [\"invariant\"]}")] = None,
        layers: Annotated[list[str] | None, Field(
            description="Layers to search (base, user, delta, local); default all four")
        ] = None,
        query_vec: Annotated[list[float] | None, Field(
            description="A query embedding to use instead of embedding the query text")
        ] = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        """Search the layered context store (hybrid vector + keyword, precedence local >
        user > delta > base). Results carry their layer, score, provenance and any
        conflicting lower-layer versions."""
        kinds = filters.kind if filters is not None else None
        out = _tool_call(service.search, SearchArgs(query, k, kinds, layers, query_vec))
        return _result(out, _render_search(out))

    def agents_context_write(
        content: Annotated[str, Field(description="The knowledge to record (non-empty).")],
        kind: Annotated[str, Field(
            description="Kind, e.g. derived-summary, invariant, decision, note")],
        confidence: Annotated[float, Field(description="Your confidence, 0.0 to 1.0.")],
        sources: Annotated[list[int | str] | None, Field(
            description="Provenance: chunk ids or 'path:line' references")] = None,
        scope: Annotated[str, Field(
            description="'local' (ephemeral notes) or 'delta' (reviewable proposals)")
        ] = "local",
    ) -> Annotated[CallToolResult, WriteOut]:
        """Append a chunk to the local or delta layer (append-only; author is recorded as
        mcp). Base and user are not writable by agents. Returns the new chunk id."""
        out = _tool_call(service.write, WriteRequest(content, kind, confidence,
                                                     sources or [], scope))
        return _result(out, f"Wrote chunk {out['id']} to the {out['layer']} layer.")

    def agents_context_propose(
        context_id: Annotated[int, Field(description="Id of a chunk in local or delta.")],
        target: Annotated[str, Field(description="Must be 'user'.")] = "user",
    ) -> Annotated[CallToolResult, ProposeOut]:
        """Propose a local or delta chunk for promotion to the user layer. A human accepts
        or rejects it; the proposal is recorded in the delta layer."""
        out = _tool_call(service.propose, context_id, target)
        verb = "Already proposed" if out["already_pending"] else "Proposed"
        return _result(out, f"{verb}: chunk {out['context_id']} for the user layer "
                            f"(proposal {out['proposal_id']}); a human will review it.")

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                idempotent_hint=True, open_world_hint=False)
    append_only = ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                  idempotent_hint=False, open_world_hint=False)
    for tool_name, fn, notes in (
        ("agents_search", agents_search, read_only),
        ("agents_context_write", agents_context_write, append_only),
        ("agents_context_propose", agents_context_propose, append_only),
    ):
        description = " ".join((fn.__doc__ or "").split())
        server.add_tool(fn, name=tool_name, description=description, annotations=notes)
        server.add_tool(fn, name=tool_name.replace("_", "."), description=description,
                        annotations=notes)

    def _resource(fn: Any, *args: Any) -> str:
        try:
            return json.dumps(fn(*args), ensure_ascii=False, indent=2)
        except NotFoundError as exc:
            raise ResourceError(str(exc)) from exc
        except SedimentError as exc:
            raise ResourceError(str(exc)) from exc

    @server.resource("agentsdb://layers/{layer}", name="layer",
                     description="Summary of one layer: path, chunk count, embedding profile",
                     mime_type="application/json")
    def layer_resource(layer: str) -> str:
        return _resource(service.layer_summary, layer)

    @server.resource("agentsdb://chunks/{chunk_id}", name="chunk",
                     description="A chunk as precedence resolves it, with hidden versions",
                     mime_type="application/json")
    def chunk_resource(chunk_id: str) -> str:
        return _resource(service.read_chunk, _chunk_id(chunk_id))

    @server.resource("agentsdb://layers/{layer}/chunks/{chunk_id}", name="layer_chunk",
                     description="One layer's version of a chunk",
                     mime_type="application/json")
    def layer_chunk_resource(layer: str, chunk_id: str) -> str:
        return _resource(service.read_chunk, _chunk_id(chunk_id), layer)

    for layer_name in ("base", "user", "delta", "local"):
        _add_layer_resource(server, service, layer_name)
    _add_knowledge(server, service)
    add_memory_tools(server, service)
    return server


class KnowledgeOut(BaseModel):
    query: str
    units: list[dict[str, Any]]


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
    """KCP: ``search_knowledge`` and the manifests' units as ``knowledge://`` resources."""

    def search_knowledge(
        query: Annotated[str, Field(description="What to look for (non-empty).")],
        audience: Annotated[str | None, Field(
            description="Only units for this audience, e.g. agent, developer")] = None,
        scope: Annotated[str | None, Field(
            description="Only units of this scope: global, project or module")] = None,
        exclude_superseded: Annotated[bool, Field(
            description="Leave out units another unit supersedes")] = True,
        k: Annotated[int, Field(description="Number of units, 1 to 100.")] = 10,
    ) -> Annotated[CallToolResult, KnowledgeOut]:
        """Find knowledge units (KCP knowledge.yaml) by intent, trigger and content. Each
        result names the unit's resource URI, its intent, the best matching chunk, and the
        units to read first (depends_on, in order)."""
        out = _tool_call(service.search_knowledge, query, audience, scope,
                         exclude_superseded, k)
        return _result(out, _render_units(out))

    server.add_tool(search_knowledge, name="search_knowledge",
                    description=" ".join((search_knowledge.__doc__ or "").split()),
                    annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                                idempotent_hint=True, open_world_hint=False))

    def read(uri: str) -> str:
        try:
            return service.knowledge.read_resource(uri).text
        except SedimentError as exc:
            raise ResourceError(str(exc)) from exc

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
    if not raw.isdigit() or not 0 < int(raw) < 2**32:
        raise ResourceError(f"chunk id {raw!r} must be an integer from 1 to {2**32 - 1}")
    return int(raw)


def _add_layer_resource(server: MCPServer, service: ContextService, layer_name: str) -> None:
    """Each standard layer is also listed as a concrete resource, so clients show it."""

    def read() -> str:
        try:
            return json.dumps(service.layer_summary(layer_name), ensure_ascii=False, indent=2)
        except SedimentError as exc:
            raise ResourceError(str(exc)) from exc

    read.__name__ = f"{layer_name}_layer"
    server.resource(f"agentsdb://layers/{layer_name}", name=f"{layer_name} layer",
                    description=f"The {layer_name} layer's summary",
                    mime_type="application/json")(read)

"""The shapes of the services' responses, as typed models.

The services return plain dictionaries (built by one serializer each, e.g.
:func:`sediment.ops.query.search_response`); these models describe them for adapters that
publish a schema: the MCP tools' output schemas, and the HTTP API's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ChunkOut", "DocumentOut", "KnowledgeOut", "ProposeOut", "SearchOut", "SourcesOut",
           "WriteOut"]


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
    explain: dict[str, Any] | None = Field(
        default=None, description="How the score was made (only when explain was asked)")


class SearchOut(BaseModel):
    query: str | None
    layers: list[str]
    results: list[ChunkOut]
    timings_ms: dict[str, float] | None = Field(
        default=None, description="Time per stage (only when explain was asked)")


class WriteOut(BaseModel):
    id: int
    layer: str


class ProposeOut(BaseModel):
    proposal_id: int
    context_id: int
    from_layer: str
    copied_to_delta: bool
    already_pending: bool


class KnowledgeOut(BaseModel):
    query: str
    units: list[dict[str, Any]]


class DocumentChunkOut(BaseModel):
    id: int
    layer: str
    kind: str
    line: int


class DocumentOut(BaseModel):
    """A chunk as precedence resolves it, and the whole document it came from."""

    id: int
    layer: str
    kind: str
    content: str
    author: str
    confidence: float
    created_at_ms: int
    sources: list[int | str]
    title: str | None = Field(description="The document's first heading, else its file name")
    body: str = Field(description="The document's chunks in line order (the chunk's own "
                                  "content when it names no file)")
    path: str | None = Field(description="The file the chunk came from, if it names one")
    truncated: bool = Field(description="True when body stops before the document's end")
    chunks: list[DocumentChunkOut]


class SourceDocumentOut(BaseModel):
    path: str
    source: str | None = Field(description="The configured source it came from, if named")
    chunks: int


class SourceLayerOut(BaseModel):
    name: str
    path: str
    chunks: int = Field(description="Readable chunks (no events, no memories)")
    sources: list[dict[str, Any]] = Field(description="The sources compile recorded (base)")
    documents: list[SourceDocumentOut]


class SourcesOut(BaseModel):
    layers: list[SourceLayerOut]
    truncated: bool = Field(description="True when more documents exist than are listed")

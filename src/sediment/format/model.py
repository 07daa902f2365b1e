"""The chunk record of RFC section 7, independent of how it is encoded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

AUTHORS = ("human", "mcp")

Source = int | str
"""A provenance reference: an ``int`` is a chunk id, a ``str`` a ``path:line`` reference."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk as RFC 7.1 defines it, without its embedding (that lives in the matrix)."""

    id: int
    kind: str
    content: str
    author: str
    confidence: float
    created_at_ms: int
    sources: tuple[Source, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "content": self.content,
            "author": self.author,
            "confidence": round(float(self.confidence), 6),
            "created_at_ms": self.created_at_ms,
            "sources": list(self.sources),
        }


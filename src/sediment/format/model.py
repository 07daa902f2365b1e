"""The chunk record of RFC section 7, independent of how it is encoded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sediment.errors import ValidationError

AUTHORS = ("human", "mcp")
U32_MAX = 2**32 - 1

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



def check_chunk(c: Chunk) -> None:
    """The rules of RFC 7.1 on one chunk, which every backend applies before it stores one
    (the layer writer, and a database's append through ``store.commit.materialise``), so
    a database never holds a chunk that a pull could not write as a layer file."""
    if not 0 < c.id <= U32_MAX:
        raise ValidationError(f"chunk id {c.id} is outside 1..{U32_MAX}")
    if not isinstance(c.kind, str) or not c.kind:
        raise ValidationError(f"chunk {c.id}: kind must be a non-empty string")
    if not isinstance(c.content, str) or not c.content:
        raise ValidationError(f"chunk {c.id}: content must be a non-empty string")
    if not isinstance(c.author, str) or c.author not in AUTHORS:
        raise ValidationError(f"chunk {c.id}: author {c.author!r} must be 'human' or 'mcp'")
    if not 0.0 <= c.confidence <= 1.0:
        raise ValidationError(f"chunk {c.id}: confidence {c.confidence} is outside 0..1")
    if not 0 <= c.created_at_ms < 2**64:
        raise ValidationError(f"chunk {c.id}: created_at {c.created_at_ms} is not a u64")
    for s in c.sources:
        if isinstance(s, bool) or not isinstance(s, int | str):
            raise ValidationError(f"chunk {c.id}: source {s!r} must be a chunk id or a string")
        if isinstance(s, int) and not 0 < s <= U32_MAX:
            raise ValidationError(f"chunk {c.id}: source chunk id {s} is outside 1..{U32_MAX}")
        if isinstance(s, str) and not s:
            raise ValidationError(f"chunk {c.id}: source strings must be non-empty")
    for field, text in (("kind", c.kind), ("content", c.content),
                        *(("sources", s) for s in c.sources if isinstance(s, str))):
        check_unicode(text, f"chunk {c.id}: {field}")


def check_unicode(text: str, field: str) -> str:
    """``text`` if it can be stored as UTF-8 (RFC 8: every string is UTF-8); a lone
    surrogate (``"\\ud800"``, which JSON and Python strings can carry) is a ValidationError
    naming ``field``, not a UnicodeEncodeError from the writer or the database driver."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{field} is not valid Unicode: it holds a lone surrogate "
                              f"{text[exc.start]!r} at character {exc.start}; send the "
                              "character itself or a surrogate pair") from None
    return text

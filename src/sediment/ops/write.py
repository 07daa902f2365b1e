"""The write service behind ``sediment write`` and the MCP ``agents_context_write`` tool.

Every rule the RFC puts on an agent's write is checked here, once, so no adapter can skip
one: scope local or delta only (11.1), author recorded as given (``mcp`` for agents),
confidence in 0..1 (7.1), sources that are chunk ids present in the layer set or
``path:line`` references (7.2), and ``meta.*`` kinds reserved for Sediment's own events.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sediment.credentials import refuse_credentials
from sediment.embed import Embedder
from sediment.errors import ValidationError
from sediment.format import Source
from sediment.ops.query import check_profile
from sediment.store import AGENT_WRITABLE, LayerName, LayerSet, NewChunk

KIND_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
SOURCE_RE = re.compile(r"^(?P<path>[^\x00\n]+):(?P<line>[1-9][0-9]{0,8})(?:-[1-9][0-9]{0,8})?$")
MAX_CONTENT_CHARS = 100_000
MAX_SOURCES = 64


@dataclass(frozen=True, slots=True)
class WriteRequest:
    content: Any
    kind: Any
    confidence: Any
    sources: Any = ()
    scope: Any = "local"


def check_kind(kind: Any, *, allow_meta: bool = False) -> str:
    if not isinstance(kind, str) or not KIND_RE.match(kind):
        raise ValidationError(
            f"kind {kind!r} is invalid: use 1-64 letters, digits, '.', '_' or '-', starting "
            "with a letter or digit (e.g. 'invariant', 'derived-summary')")
    if kind.startswith("meta.") and not allow_meta:
        raise ValidationError(f"kind {kind!r} is reserved: 'meta.*' kinds record Sediment's "
                              "own events")
    return kind


def check_confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"confidence must be a number from 0.0 to 1.0, got {value!r}")
    conf = float(value)
    if math.isnan(conf) or not 0.0 <= conf <= 1.0:
        raise ValidationError(f"confidence must be from 0.0 to 1.0, got {value!r}")
    return conf


def check_content(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("content must be a non-empty string")
    if len(value) > MAX_CONTENT_CHARS:
        raise ValidationError(f"content has {len(value)} characters; the maximum is "
                              f"{MAX_CONTENT_CHARS}")
    return value


def check_sources(layerset: LayerSet, value: Any) -> tuple[Source, ...]:
    """Chunk ids must exist in the layer set; strings must be ``path:line`` references."""
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValidationError("sources must be a list of chunk ids or 'path:line' strings")
    if len(value) > MAX_SOURCES:
        raise ValidationError(f"sources has {len(value)} entries; the maximum is {MAX_SOURCES}")
    out: list[Source] = []
    for i, s in enumerate(value):
        if isinstance(s, str) and s.strip().isdigit():
            s = int(s.strip())
        if isinstance(s, bool):
            raise ValidationError(f"sources[{i}] is a boolean; expected a chunk id or "
                                  "'path:line'")
        if isinstance(s, int):
            if layerset.get(s) is None:
                raise ValidationError(f"sources[{i}]: chunk {s} does not exist in any layer")
            out.append(s)
        elif isinstance(s, str):
            if not SOURCE_RE.match(s):
                raise ValidationError(
                    f"sources[{i}] {s!r} is not a 'path:line' reference (e.g. "
                    "'docs/ARCHITECTURE.md:12') or a chunk id")
            out.append(s)
        else:
            raise ValidationError(f"sources[{i}] is {type(s).__name__}; expected a chunk id "
                                  "or 'path:line'")
    return tuple(out)


def check_scope(value: Any, allowed: Sequence[LayerName] = AGENT_WRITABLE) -> LayerName:
    names = ", ".join(n.value for n in allowed)
    if not isinstance(value, str):
        raise ValidationError(f"scope must be one of {names}")
    scope = LayerName.parse(value)
    if scope not in allowed:
        raise ValidationError(f"scope {scope.value!r} is not writable here: writes go to "
                              f"{names} (base is immutable, user is for human review)")
    return scope


def write_context(layerset: LayerSet, embedder: Embedder, request: WriteRequest, *,
                  author: str = "mcp",
                  allowed: Sequence[LayerName] = AGENT_WRITABLE) -> int:
    """Validate, embed and append one chunk; return its new id."""
    scope = check_scope(request.scope, allowed)
    content = check_content(request.content)
    refuse_credentials(content, "content")
    kind = check_kind(request.kind)
    confidence = check_confidence(request.confidence)
    sources = check_sources(layerset, request.sources)
    check_profile(layerset, embedder, None)
    vec = embedder.embed([content])
    ids = layerset.append(
        scope, [NewChunk(kind, content, author, confidence, sources)], vec,
        profile=embedder.profile.to_dict(), embedder_metadata=embedder.metadata(),
        allowed=allowed)
    return ids[0]

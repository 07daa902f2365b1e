"""The write service behind ``sediment write`` and the MCP ``agents_context_write`` tool.

Every rule the RFC puts on an agent's write is checked once, so no adapter can skip one.
The request model (:class:`~sediment.ops.requests.WriteRequest`) holds the rules of each
field: content, kind (``meta.*`` and ``memory.*`` reserved: ``sediment.store.rules``),
confidence in 0..1 (7.1). Here are the rules that need the store: scope local or delta
only (11.1), sources that are chunk ids the actor may read or ``path:line`` references
(7.2); the author is recorded as given (``mcp`` for agents), the actor in a ``meta.write``
event of the same commit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sediment.credentials import refuse_credentials
from sediment.embed import Embedder
from sediment.errors import ValidationError
from sediment.format import AUTHORS, Source
from sediment.format.ids import parse_chunk_id, parse_source_ref
from sediment.ops.query import check_profile
from sediment.ops.requests import LayerField, WriteRequest
from sediment.store import AGENT_WRITABLE, LayerName, LayerStore, New, NewChunk
from sediment.store.events import WRITE
from sediment.store.rules import Reader, write_event_data

__all__ = ["WriteRequest", "check_scope", "check_sources", "readable_id", "write_context"]


def check_sources(layerset: LayerStore, value: Sequence[int | str] | None,
                  actor: str | None = None) -> tuple[Source, ...]:
    """Chunk ids must exist in the layer set and be readable by ``actor`` (another actor's
    memory or local note, and any project memory, read as absent: citing it must not
    reveal it, and a server could not find it); strings must be ``path:line``
    references. Each id's range and each value's type are the request model's
    (:class:`~sediment.ops.requests.WriteRequest`), checked already."""
    out: list[Source] = []
    for i, s in enumerate(value or ()):
        if isinstance(s, str) and ":" not in s:
            try:
                s = parse_chunk_id(s, what=f"sources[{i}]")
            except ValidationError as exc:
                raise ValidationError(f"{exc}; or give a 'path:line' reference (e.g. "
                                      "'docs/ARCHITECTURE.md:12')") from None
        if isinstance(s, int):
            if not readable_id(layerset, s, actor):
                raise ValidationError(f"sources[{i}]: chunk {s} does not exist in any layer")
        elif parse_source_ref(s) is None:
            raise ValidationError(f"sources[{i}] {s!r} is not a 'path:line' reference (e.g. "
                                  "'docs/ARCHITECTURE.md:12') or a chunk id")
        out.append(s)
    return tuple(out)


def check_scope(scope: LayerField, allowed: Sequence[LayerName] = AGENT_WRITABLE) -> LayerName:
    name = LayerName(scope)
    if name not in allowed:
        names = ", ".join(n.value for n in allowed)
        raise ValidationError(f"scope {name.value!r} is not writable here: writes go to "
                              f"{names} (base is immutable, user is for human review)")
    return name


def write_context(layerset: LayerStore, embedder: Embedder, request: WriteRequest, *,
                  actor: str, author: str = "mcp",
                  allowed: Sequence[LayerName] = AGENT_WRITABLE) -> int:
    """Validate, embed and append one chunk with the event that records its ``actor``
    (one commit); return the chunk's new id."""
    if not isinstance(author, str) or author not in AUTHORS:
        raise ValidationError(f"author {author!r} must be 'human' or 'mcp'")
    scope = check_scope(request.scope, allowed)
    refuse_credentials(request.content, "content")
    for i, ref in enumerate(request.sources or ()):
        if isinstance(ref, str):
            refuse_credentials(ref, f"sources[{i}]")
    sources = check_sources(layerset, request.sources, actor)
    check_profile(layerset, embedder, None)
    vec = embedder.embed([request.content])
    chunk = NewChunk(request.kind, request.content, author, request.confidence, sources)
    event = NewChunk(WRITE, "", author, 1.0, (New(0),), data=write_event_data(actor, scope))
    vectors = np.vstack([vec, np.zeros((1, vec.shape[1]), dtype=np.float32)])
    ids = layerset.append(
        scope, [chunk, event], vectors,
        profile=embedder.profile.to_dict(), embedder_metadata=embedder.metadata(),
        allowed=allowed)
    return ids[0]


def readable_id(layerset: LayerStore, chunk_id: int, actor: str | None) -> bool:
    """Whether ``chunk_id``'s winning version exists and ``actor`` may read it."""
    got = layerset.get(chunk_id)
    if got is None:
        return False
    return Reader(layerset, actor).may_read(*got)

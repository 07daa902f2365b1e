"""The forget service: hide a chunk from search with a ``meta.forget`` event (nothing is
deleted; the event names who and why, and ``inspect --id`` shows it).

The event goes into the layer that holds the chunk's winning version when the caller may
write it, else into the first layer of ``allowed`` above it (a base chunk is forgotten in
user when a person forgets it), so the event is searched together with the chunk it
hides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sediment.errors import NotFoundError, PermissionDeniedError, ValidationError
from sediment.format.model import check_unicode
from sediment.store import HUMAN_WRITABLE, LayerName, LayerStore, NewChunk
from sediment.store.events import (
    FORGET,
    MEMORY_KIND_PREFIX,
    event_content,
    hidden_ids,
    is_meta_kind,
)
from sediment.store.rules import Reader, memory_row

MAX_REASON_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Forgotten:
    event_id: int | None
    context_id: int
    layer: LayerName
    already: bool


def _target(found: LayerName, allowed: Sequence[LayerName]) -> LayerName:
    if found in allowed:
        return found
    above = [n for n in allowed if n.rank > found.rank]
    if not above:
        raise PermissionDeniedError(f"no layer above {found.value} may be written here")
    return above[0]


def forget(layerset: LayerStore, context_id: Any, reason: Any, *, author: str = "human",
           allowed: Sequence[LayerName] = HUMAN_WRITABLE,
           actor: str | None = None, by: str | None = None) -> Forgotten:
    """Record that ``context_id`` is forgotten, and by whom (``by``, else ``actor``: the
    event names it beside the RFC's ``author``, as a write or a proposal does); forgetting
    it again changes nothing.

    ``actor`` forgets only what they may read (``sediment.store.rules``): another actor's
    local note or memory reads as absent, as it does to ``get``, or a forget would hide it
    from its own actor and confirm it exists. None is the machine's owner (``sediment
    forget``, which names its own actor in ``by``), who reads every local note; a memory
    is forgotten through the memory service, whose events name the actor."""
    if isinstance(context_id, bool) or not isinstance(context_id, int) or context_id <= 0:
        raise ValidationError(f"context_id must be a positive chunk id, got {context_id!r}")
    if not isinstance(reason, str) or not reason.strip():
        raise ValidationError("reason must say why the chunk is forgotten")
    if len(reason) > MAX_REASON_CHARS:
        raise ValidationError(f"reason has {len(reason)} characters; the maximum is "
                              f"{MAX_REASON_CHARS}")
    check_unicode(reason, "reason")
    with layerset.transaction():
        versions = [(n, c) for n, c in layerset.versions(context_id)
                    if not memory_row(n, c.kind)]  # forgotten through the memory tools
        if not versions:
            raise NotFoundError(f"no chunk {context_id} in any layer")
        top, chunk = versions[0]
        if not Reader(layerset, actor).may_read(top, chunk):
            if actor is None and chunk.kind.startswith(MEMORY_KIND_PREFIX):
                raise NotFoundError(f"chunk {context_id} is an actor's memory: forget it "
                                    "with sediment memory forget --actor ACTOR")
            raise NotFoundError(f"no chunk {context_id} in any layer")
        if is_meta_kind(chunk.kind):
            raise ValidationError(f"chunk {context_id} is a {chunk.kind} event, not context")
        if context_id in hidden_ids(layerset.events()):
            return Forgotten(None, context_id, top, True)
        target = _target(top, allowed)
        schema = layerset.schema()
        dim = schema.dim if schema is not None else 0
        event = NewChunk(FORGET, event_content(event="forget", context_id=context_id,
                                               reason=reason.strip(),
                                               **({"actor": who} if (who := by or actor)
                                                  else {})),
                         author, 1.0, (context_id,))
        ids = layerset.append(target, [event], np.zeros((1, dim), dtype=np.float32),
                              profile=schema.profile if schema is not None else None,
                              allowed=allowed)
    return Forgotten(ids[0], context_id, target, False)

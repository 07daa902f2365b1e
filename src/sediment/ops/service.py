"""One object holding a layer set and an embedder: what a server adapter talks to.

It serialises writes within the process (appends also lock across processes), loads the
embedding model in the background so a server answers its handshake at once, and turns
results into plain dictionaries shared by every adapter.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sediment.embed import Embedder
from sediment.errors import NotFoundError, ValidationError
from sediment.kcp import KnowledgeService
from sediment.ops.propose import propose
from sediment.ops.query import run_search
from sediment.ops.write import WriteRequest, write_context
from sediment.search import MAX_K, SearchRequest
from sediment.store import PRECEDENCE, LayerName, LayerSet

DEFAULT_LAYERS = tuple(n.value for n in (LayerName.BASE, LayerName.USER, LayerName.DELTA,
                                         LayerName.LOCAL))


@dataclass(frozen=True, slots=True)
class SearchArgs:
    query: Any = None
    k: Any = 10
    kinds: Any = None
    layers: Any = None
    query_vec: Any = None


def parse_layers(value: Any) -> tuple[LayerName, ...]:
    if value is None:
        return PRECEDENCE
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationError("layers must be a list of layer names (base, user, delta, local)")
    return tuple(LayerName.parse(v) if isinstance(v, str) else _bad_layer(v) for v in value)


def _bad_layer(v: Any) -> LayerName:
    raise ValidationError(f"layers: {v!r} is not a layer name (base, user, delta, local)")


class ContextService:
    def __init__(self, layerset: LayerSet, embedder: Embedder, *,
                 root: Path | None = None) -> None:
        self.layerset = layerset
        self.embedder = embedder
        self.knowledge = KnowledgeService(
            root or Path.cwd(), layerset,
            searcher=lambda r: run_search(layerset, r, embedder=embedder))
        self._write_lock = threading.Lock()
        self._warm: threading.Thread | None = None

    def warm_up(self) -> None:
        """Load the embedding model on a background thread (first query then runs warm)."""
        if self._warm is not None:
            return

        def load() -> None:
            # A model that fails to load is reported by the first query that needs it.
            with contextlib.suppress(Exception):
                self.embedder.embed(["warm up"])

        self._warm = threading.Thread(target=load, name="sediment-warm-up", daemon=True)
        self._warm.start()

    def search(self, args: SearchArgs) -> dict[str, Any]:
        k = args.k
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValidationError(f"k must be a positive integer, got {k!r}")
        if k > MAX_K:
            raise ValidationError(f"k is {k}; the maximum is {MAX_K}")
        kinds = args.kinds
        if kinds is not None:
            if isinstance(kinds, str) or not isinstance(kinds, Sequence) or not all(
                    isinstance(x, str) and x for x in kinds):
                raise ValidationError("filters.kind must be a list of non-empty strings")
            kinds = tuple(kinds) or None
            if kinds and any(k.startswith("memory.") for k in kinds):
                raise ValidationError("filters.kind: memories are private to their actor; "
                                      "read them with recall_memories")
        layers = parse_layers(args.layers)
        text = args.query
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise ValidationError("query must be a non-empty string")
        vec = args.query_vec
        if vec is not None and (isinstance(vec, str) or not isinstance(vec, Sequence) or not all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in vec)):
            raise ValidationError("query_vec must be a list of numbers")
        if text is None and vec is None:
            raise ValidationError("give query (a non-empty string) or query_vec")
        mode = "hybrid" if text is not None else "vector"
        request = SearchRequest(text=text, k=k, kinds=kinds, layers=layers,
                                mode=mode)  # type: ignore[arg-type]
        result = run_search(self.layerset, request, embedder=self.embedder, query_vec=vec)
        return {
            "query": text,
            "layers": [n.value for n in result.layers],
            "results": [h.to_dict() for h in result.hits],
        }

    def write(self, request: WriteRequest) -> dict[str, Any]:
        with self._write_lock:
            new_id = write_context(self.layerset, self.embedder, request, author="mcp")
        return {"id": new_id, "layer": str(request.scope)}

    def propose(self, context_id: Any, target: Any = "user") -> dict[str, Any]:
        with self._write_lock:
            p = propose(self.layerset, context_id, target)
        return {"proposal_id": p.proposal_id, "context_id": p.context_id,
                "from_layer": p.from_layer.value, "copied_to_delta": p.copied_to_delta,
                "already_pending": p.already_pending}

    def layer_summary(self, name: str) -> dict[str, Any]:
        layer_name = LayerName.parse(name)
        layer = self.layerset.layer(layer_name)
        if layer is None:
            raise NotFoundError(f"the {layer_name.value} layer is absent")
        f = layer.file
        return {"layer": layer_name.value, "path": str(layer.path), "chunks": f.chunk_count,
                "dim": f.dim, "element_type": f.element_type, "profile": f.embedding_profile,
                "chunk_ids": f.ids[:1000].tolist(), "truncated": f.chunk_count > 1000}

    def read_chunk(self, chunk_id: int, layer: str | None = None) -> dict[str, Any]:
        if layer is not None:
            layer_name = LayerName.parse(layer)
            opened = self.layerset.layer(layer_name)
            chunk = opened.file.get(chunk_id) if opened else None
            if chunk is None or chunk.kind.startswith("memory."):
                raise NotFoundError(f"no chunk {chunk_id} in the {layer_name.value} layer"
                                    + (" (it is an actor's memory)" if chunk else ""))
            return {"layer": layer_name.value, **chunk.to_dict()}
        versions = self.layerset.versions(chunk_id)
        if not versions:
            raise NotFoundError(f"no chunk {chunk_id} in any layer")
        top_layer, top = versions[0]
        if top.kind.startswith("memory."):
            raise NotFoundError(f"chunk {chunk_id} is an actor's memory; read memories with "
                                "recall_memories or manage_memory")
        return {"layer": top_layer.value, **top.to_dict(),
                "hidden_versions": [{"layer": n.value, **c.to_dict()} for n, c in versions[1:]]}

    def search_knowledge(self, query: Any, audience: Any = None, scope: Any = None,
                         exclude_superseded: Any = True, k: Any = 10) -> dict[str, Any]:
        if audience is not None and not isinstance(audience, str):
            raise ValidationError("audience must be a string, e.g. 'agent' or 'developer'")
        if not isinstance(exclude_superseded, bool):
            raise ValidationError("exclude_superseded must be true or false")
        units = self.knowledge.search_knowledge(query, audience, scope, exclude_superseded, k)
        return {"query": query, "units": units}

"""One object holding a layer set and an embedder: what a server adapter talks to.

It takes the typed requests of :mod:`sediment.ops.requests` (adapters build them with
``parse``), serialises writes within the process (appends also lock across processes),
loads the embedding model in the background so a server answers its handshake at once,
and returns the plain dictionaries every adapter shares.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sediment.embed import Embedder
from sediment.errors import NotFoundError
from sediment.kcp import KnowledgeService
from sediment.ops.propose import propose
from sediment.ops.query import run_query, run_search, search_response
from sediment.ops.read import get_document, list_sources, readable_layer
from sediment.ops.requests import (
    GetRequest,
    KnowledgeRequest,
    ProposeRequest,
    SearchParams,
    SourcesRequest,
    WriteRequest,
)
from sediment.ops.rerank import STANDARD, RerankerFactory
from sediment.ops.write import write_context
from sediment.store import LayerName, LayerSet, LayerStore
from sediment.store.events import MEMORY_KIND_PREFIX
from sediment.store.rules import Reader, is_hidden_kind


class ContextService:
    """The store as agents see it. ``rerankers`` is the pipeline every search applies
    (default :data:`~sediment.ops.rerank.STANDARD`: KCP triggers when manifests exist).

    ``layerset`` is any :class:`~sediment.store.LayerStore`: the layer files, or a
    PostgreSQL project; KCP manifests are read over layer files only."""

    def __init__(self, layerset: LayerStore, embedder: Embedder, *,
                 root: Path | None = None,
                 rerankers: Sequence[RerankerFactory] = STANDARD) -> None:
        self.store = layerset
        self.embedder = embedder
        self.rerankers = tuple(rerankers)
        self.knowledge = KnowledgeService(root or Path.cwd(),
                                          layerset.layer_files() or LayerSet({}))
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

    def search(self, params: SearchParams, actor: str | None) -> dict[str, Any]:
        """Search as ``actor`` reads the store (``sediment.store.rules``). There is no
        default: None reads every local note, as the machine's owner, and an adapter that
        serves a signed-in actor must say so (the web page's search once forgot and showed
        every actor's local notes)."""
        result = run_query(self.store, params, embedder=self.embedder,
                           rerankers=self.rerankers, actor=actor)
        return search_response(params, result)

    def write(self, request: WriteRequest, actor: str) -> dict[str, Any]:
        with self._write_lock:
            new_id = write_context(self.store, self.embedder, request, actor=actor,
                                   author="mcp")
        return {"id": new_id, "layer": request.scope}

    def propose(self, request: ProposeRequest, actor: str) -> dict[str, Any]:
        with self._write_lock:
            p = propose(self.store, request.context_id, actor=actor)
        return {"proposal_id": p.proposal_id, "context_id": p.context_id,
                "from_layer": p.from_layer.value, "copied_to_delta": p.copied_to_delta,
                "already_pending": p.already_pending}

    def layer_summary(self, name: str, actor: str | None) -> dict[str, Any]:
        """A layer's summary as ``actor`` reads it (``ops.read.readable_layer``)."""
        layer_name = LayerName.parse(name)
        got = readable_layer(self.store, layer_name, actor)
        if got is None:
            raise NotFoundError(f"the {layer_name.value} layer is absent")
        return got[0].to_dict()

    def read_chunk(self, chunk_id: int, layer: str | None, actor: str | None
                   ) -> dict[str, Any]:
        """A chunk as precedence resolves it (or one layer's version), if ``actor`` may
        read it (``sediment.store.rules``): a memory or another actor's local note reads
        as absent. Hidden versions another actor may not read are left out too."""
        reader = Reader(self.store, actor)
        if layer is not None:
            layer_name = LayerName.parse(layer)
            chunk = self.store.chunk(layer_name, chunk_id)
            if chunk is not None and not reader.may_read(layer_name, chunk):
                chunk = None
            if chunk is None or is_hidden_kind(chunk.kind):
                raise NotFoundError(f"no chunk {chunk_id} in the {layer_name.value} layer"
                                    + (" (it is an actor's memory)" if chunk is not None
                                       and chunk.kind.startswith(MEMORY_KIND_PREFIX) else ""))
            return {"layer": layer_name.value, **chunk.to_dict()}
        versions = [(n, c) for n, c in self.store.versions(chunk_id) if reader.may_read(n, c)]
        if versions and versions[0][1].kind.startswith(MEMORY_KIND_PREFIX):
            raise NotFoundError(f"chunk {chunk_id} is an actor's memory; read memories with "
                                "recall_memories or manage_memory")
        versions = [(n, c) for n, c in versions if not is_hidden_kind(c.kind)]
        if not versions:
            raise NotFoundError(f"no chunk {chunk_id} in any layer")
        top_layer, top = versions[0]
        return {"layer": top_layer.value, **top.to_dict(),
                "hidden_versions": [{"layer": n.value, **c.to_dict()} for n, c in versions[1:]]}

    def get(self, request: GetRequest, actor: str | None) -> dict[str, Any]:
        """A chunk and its whole source document (``agents_get``, ``context.get``), as
        ``actor`` may read it."""
        return get_document(self.store, request.id, actor)

    def sources(self, request: SourcesRequest, actor: str | None) -> dict[str, Any]:
        """The layers and the documents they hold (``agents_sources``, ``context.sources``)."""
        del request
        return list_sources(self.store, actor)

    def search_knowledge(self, params: KnowledgeRequest, actor: str | None
                         ) -> dict[str, Any]:
        """KCP units for a query: a hybrid search as ``actor`` reads the store (as
        :meth:`search`), with this service's embedder, re-ranked by the units' triggers,
        grouped one result per unit."""
        request, index = self.knowledge.knowledge_request(params.query, params.k,
                                                          mode="hybrid")
        result = run_search(self.store, replace(request, actor=actor),
                            embedder=self.embedder)
        units = self.knowledge.units_of(result, index, params.audience, params.scope,
                                        params.exclude_superseded, params.k)
        return {"query": params.query, "units": units}

"""The Python API: a layer set opened for a program, with the services the CLI and the MCP
server use (search, write, propose, forget), so embedding Sediment in an agent loop
behaves exactly like ``sediment search`` and ``sediment write``::

    import sediment

    store = sediment.open("path/to/project")          # the directory of the AGENTS*.db files
    for hit in store.search("release checklist", k=5):
        print(hit.score, hit.layer.value, hit.id, hit.chunk.content)
    new_id = store.write("Deploys freeze on Fridays.", kind="decision", confidence=0.9)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from sediment.embed import DEFAULT_EMBEDDER, Embedder, make_embedder
from sediment.errors import NotFoundError
from sediment.format import Chunk
from sediment.memory.model import check_actor
from sediment.ops.embedding import embedder_for_layers
from sediment.ops.forget import Forgotten, forget
from sediment.ops.propose import Proposal, propose
from sediment.ops.query import run_query
from sediment.ops.requests import SearchOptions, WriteRequest, parse
from sediment.ops.rerank import STANDARD
from sediment.ops.write import write_context
from sediment.search import Hit
from sediment.server.principals import default_actor
from sediment.store import AGENT_WRITABLE, HUMAN_WRITABLE, LayerName, LayerSet

__all__ = ["Store", "open_store"]


class Store:
    """The four layers of one directory (any may be absent) and the embedder for them.

    ``embedder`` is a name (``minilm``, ``hash``; ``openai`` needs :func:`make_embedder`'s
    options, so pass an instance) or an :class:`Embedder`; None takes the offline embedder
    the layers record, else MiniLM, as the CLI does.
    """

    def __init__(self, directory: str | os.PathLike[str], *,
                 embedder: str | Embedder | None = None,
                 cache_path: str | os.PathLike[str] | None = None,
                 actor: str | None = None) -> None:
        self.directory = Path(directory)
        self.actor = check_actor(actor or default_actor())
        if not self.directory.is_dir():
            raise NotFoundError(f"{self.directory}: no such directory")
        self.layerset = LayerSet.from_directory(self.directory)
        self._embedder_choice = embedder
        self._cache = Path(cache_path) if cache_path is not None else None
        self._embedder: Embedder | None = embedder if isinstance(embedder, Embedder) else None

    @property
    def embedder(self) -> Embedder:
        """The embedder for text queries and writes, chosen on first use."""
        if self._embedder is None:
            choice = self._embedder_choice
            found = None if isinstance(choice, str) else embedder_for_layers(
                self.layerset, cache_path=self._cache)
            self._embedder = found or make_embedder(
                choice if isinstance(choice, str) else DEFAULT_EMBEDDER, cache_path=self._cache)
        return self._embedder

    @property
    def layers(self) -> list[LayerName]:
        """The layers present, highest precedence first."""
        return [layer.name for layer in self.layerset.layers()]

    def search(self, query: str, *, k: int = 10, kinds: Sequence[str] | None = None,
               layers: Sequence[str] | None = None,
               mode: Literal["hybrid", "vector", "lexical"] = "hybrid",
               include_meta: bool = False) -> list[Hit]:
        """The ``k`` best chunks for ``query``, as ``sediment search`` ranks them."""
        params = parse(SearchOptions, {
            "query": query, "k": k, "filters": {"kind": list(kinds)} if kinds else None,
            "layers": list(layers) if layers is not None else None, "mode": mode,
            "include_meta": include_meta})
        embedder = self.embedder if params.needs_embedder else None
        return run_query(self.layerset, params, embedder=embedder, rerankers=STANDARD).hits

    def write(self, content: str, *, kind: str, confidence: float,
              sources: Sequence[int | str] = (), scope: Literal["local", "delta"] = "local",
              author: Literal["human", "mcp"] = "human") -> int:
        """Append one chunk to the local or delta layer; return its new id."""
        request = parse(WriteRequest, {"content": content, "kind": kind,
                                       "confidence": confidence, "sources": list(sources),
                                       "scope": scope})
        return write_context(self.layerset, self.embedder, request, actor=self.actor,
                             author=author, allowed=AGENT_WRITABLE)

    def propose(self, chunk_id: int) -> Proposal:
        """Propose a local or delta chunk for the user layer (RFC 11.2)."""
        return propose(self.layerset, chunk_id, actor=self.actor)

    def forget(self, chunk_id: int, *, reason: str) -> Forgotten:
        """Hide a chunk from search with a forget event (nothing is deleted)."""
        return forget(self.layerset, chunk_id, reason, allowed=HUMAN_WRITABLE)

    def get(self, chunk_id: int) -> Chunk | None:
        """The winning version of a chunk (highest layer), or None."""
        found = self.layerset.get(chunk_id)
        return found[1] if found is not None else None


def open_store(directory: str | os.PathLike[str], *, embedder: str | Embedder | None = None,
               cache_path: str | os.PathLike[str] | None = None,
               actor: str | None = None) -> Store:
    return Store(directory, embedder=embedder, cache_path=cache_path, actor=actor)

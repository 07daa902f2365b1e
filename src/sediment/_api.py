"""The Python API: a store opened for a program, with the services the CLI and the MCP
server use (search, write, propose, forget, memories, progressive context), so embedding
Sediment in an agent loop behaves exactly like ``sediment search`` and the MCP tools::

    import sediment

    store = sediment.open("path/to/project")          # the directory of the AGENTS*.db files
    store = sediment.open("postgresql://db/sediment")  # or a team server's project
    for hit in store.search("release checklist", k=5):
        print(hit.score, hit.layer.value, hit.id, hit.chunk.content)
    new_id = store.write("Deploys freeze on Fridays.", kind="decision", confidence=0.9)

The address picks the backend, as the CLI's ``--dir`` and ``--store`` do.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from sediment.config import Environment, places, process_actor
from sediment.embed import DEFAULT_EMBEDDER, Embedder, make_embedder
from sediment.errors import NotFoundError, ValidationError
from sediment.format import Chunk
from sediment.format.ids import check_chunk_id
from sediment.memory.model import check_actor
from sediment.ops.embedding import embedder_for_layers
from sediment.ops.forget import Forgotten, forget
from sediment.ops.propose import Proposal, propose
from sediment.ops.query import run_query
from sediment.ops.requests import SearchOptions, WriteRequest, parse
from sediment.ops.rerank import STANDARD
from sediment.ops.write import write_context
from sediment.search import Hit
from sediment.store import AGENT_WRITABLE, HUMAN_WRITABLE, LayerName, LayerSet, LayerStore
from sediment.store.rules import Reader
from sediment.workspace import Workspace

if TYPE_CHECKING:
    from sediment.context import ContextLoop
    from sediment.memory import MemoryService
    from sediment.pg.database import Database

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")

__all__ = ["Store"]


class Store:
    """The four layers of one directory (any may be absent), or of a team server's project
    (a ``postgresql://`` URL), the embedder for them, and the actor the program acts as.

    ``embedder`` is a name (``minilm``, ``hash``; ``openai`` needs :func:`make_embedder`'s
    options, so pass an instance) or an :class:`Embedder`; None takes the offline embedder
    the layers record, else MiniLM, as the CLI does. ``actor`` owns the memories, context
    and local notes the program writes (default: ``SEDIMENT_ACTOR`` or the OS user); given
    explicitly, searches and ``get`` also read only what that actor may, as over MCP.
    Without it the program reads as the machine's owner, as the CLI does.
    """

    def __init__(self, location: str | os.PathLike[str], *,
                 embedder: str | Embedder | None = None,
                 cache_path: str | os.PathLike[str] | None = None,
                 actor: str | None = None) -> None:
        text = _location(location)
        if embedder is not None and not isinstance(embedder, str | Embedder):
            raise ValidationError(f"embedder must be a name (minilm, hash, openai) or an "
                                  f"Embedder, got {type(embedder).__name__}")
        if cache_path is not None and not isinstance(cache_path, str | os.PathLike):
            raise ValidationError(f"cache_path must be a path, got {type(cache_path).__name__}")
        self._env = Environment.read()  # read once: the API is an adapter, like the CLI
        self.actor = check_actor(process_actor(self._env) if actor is None else actor)
        self._reader = None if actor is None else self.actor
        self.url: str | None = None
        self.directory: Path | None = None
        self.layerset: LayerStore
        self._database: Database | None = None
        if text.lower().startswith(_POSTGRES_SCHEMES):
            from sediment.pg import PgStore
            from sediment.pg.database import Database

            self.url = text
            self._database = Database(text)  # one pool: the layers' and the workspace's
            try:
                self.layerset = PgStore(self._database.url, database=self._database)
            except BaseException:
                self._database.close()
                raise
        else:
            self.directory = Path(text)
            if not self.directory.is_dir():
                raise NotFoundError(f"{self.directory}: " + (
                    "a file, not a directory: open the directory of the layer files"
                    if self.directory.exists() else "no such directory"))
            self.layerset = LayerSet.from_directory(self.directory)
        self._workspace: Workspace | None = None
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
        return self.layerset.present()

    def search(self, query: str, *, k: int = 10, kinds: Sequence[str] | None = None,
               layers: Sequence[str] | None = None,
               mode: Literal["hybrid", "vector", "lexical"] = "hybrid",
               include_meta: bool = False) -> list[Hit]:
        """The ``k`` best chunks for ``query``, as ``sediment search`` ranks them."""
        params = parse(SearchOptions, {
            "query": query, "k": k,
            "filters": None if kinds is None or kinds in ([], ()) else {"kind": _listed(kinds)},
            "layers": _listed(layers), "mode": mode,
            "include_meta": include_meta})
        embedder = self.embedder if params.needs_embedder else None
        return run_query(self.layerset, params, embedder=embedder, rerankers=STANDARD,
                         actor=self._reader).hits

    def write(self, content: str, *, kind: str, confidence: float,
              sources: Sequence[int | str] = (), scope: Literal["local", "delta"] = "local",
              author: Literal["human", "mcp"] = "human") -> int:
        """Append one chunk to the local or delta layer; return its new id."""
        request = parse(WriteRequest, {"content": content, "kind": kind,
                                       "confidence": confidence, "sources": _listed(sources),
                                       "scope": scope})
        return write_context(self.layerset, self.embedder, request, actor=self.actor,
                             author=author, allowed=AGENT_WRITABLE)

    def propose(self, chunk_id: int) -> Proposal:
        """Propose a local or delta chunk for the user layer (RFC 11.2)."""
        return propose(self.layerset, chunk_id, actor=self.actor)

    def forget(self, chunk_id: int, *, reason: str) -> Forgotten:
        """Hide a chunk from search with a forget event (nothing is deleted); given an
        ``actor``, only a chunk that actor may read, as ``get``; the event names the
        store's actor."""
        return forget(self.layerset, chunk_id, reason, allowed=HUMAN_WRITABLE,
                      actor=self._reader, by=self.actor)

    def get(self, chunk_id: int) -> Chunk | None:
        """The winning version of a chunk (highest layer), or None."""
        found = self.layerset.get(check_chunk_id(chunk_id))
        if found is None or not Reader(self.layerset, self._reader).may_read(*found):
            return None
        return found[1]

    # Memories and progressive context: the services of the memory and context tools.

    @property
    def workspace(self) -> Workspace:
        """The services over this store, as the CLI and the servers build them."""
        if self._workspace is None:
            own = replace(places(self._env), actor=self.actor)
            if self._database is not None:
                self._workspace = Workspace.over_database(
                    self._database, self.embedder, own, store=self.layerset)
            else:
                files = self.layerset.layer_files()
                assert files is not None
                self._workspace = Workspace.over_files(files, self.embedder, own,
                                                       root=self.directory)
        return self._workspace

    @property
    def memory(self) -> MemoryService:
        """The memory service (``save``, ``recall``, ``manage``; each takes the actor)."""
        return self.workspace.memory

    @property
    def context(self) -> ContextLoop:
        """The progressive context service (``store_context``, ``get_relevant_context``,
        ``mark_useful``, ...; each takes the actor)."""
        return self.workspace.context

    def save_memory(self, content: str, category: str, **options: Any) -> dict[str, Any]:
        """``save_memory`` as this store's actor: the same decision, the same answer."""
        return self.memory.save(self.actor, content, category, **options)

    def recall(self, query: str, **options: Any) -> dict[str, Any]:
        """``recall_memories`` as this store's actor."""
        return self.memory.recall(self.actor, query, **options)

    def manage_memory(self, action: str, **options: Any) -> dict[str, Any]:
        """``manage_memory`` as this store's actor (list, update, delete, forget_all, ...)."""
        return self.memory.manage(self.actor, action, **options)

    def store_context(self, content: str, context_type: str, **options: Any
                      ) -> dict[str, Any]:
        """``store_context`` as this store's actor."""
        return self.context.store_context(self.actor, content, context_type, **options)

    def relevant_context(self, query: str, **options: Any) -> dict[str, Any]:
        """``get_relevant_context`` as this store's actor."""
        return self.context.get_relevant_context(self.actor, query, **options)

    def close(self) -> None:
        """Write out batched use counts and close connections (also on ``with`` exit)."""
        workspace, self._workspace = self._workspace, None
        if workspace is not None:
            workspace.close()  # closes the pool too
        elif self._database is not None:
            self._database.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 _tb: TracebackType | None) -> None:
        self.close()


def _location(value: object) -> str:
    """The text of a directory or URL given to :func:`sediment.open`."""
    text = os.fspath(value) if isinstance(value, str | os.PathLike) else None
    if not isinstance(text, str):
        raise ValidationError("location must be a directory or a postgresql:// URL (a str or "
                              f"a path), got {type(value).__name__}")
    if not text.strip():
        raise ValidationError("location is empty: give a directory (\".\" for this one) "
                              "or a postgresql:// URL")
    return text


def _listed(value: object) -> object:
    """A tuple as the list the strict request models take; anything else as it is, for
    the model to name what is wrong with it."""
    return list(value) if isinstance(value, tuple) else value

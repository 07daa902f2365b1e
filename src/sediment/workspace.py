"""One workspace: a store and every service built on it, made in this one place.

A workspace holds an opened store (layer files or a team server's PostgreSQL project),
the embedder for it, and the memory, progressive-context and search services over them.
The servers (MCP, the HTTP API, the web page, personas), the ``memory`` and ``context``
commands and the Python API (``sediment.open``) take their services from a workspace, so
a rule about how a service is wired (where an actor's memories live, which store a
context loop reads, what a memory may relate to) is written once. The one-shot layer
commands (``search``, ``write``, ``propose``, ``forget``, ``diff``, ``proposals``) open
the store alone and call the same ``sediment.ops`` functions the search service calls.
The adapters read the configuration and hand it over as :class:`Places` (with the
process's own actor and token file, which the servers take from here); nothing here
reads the environment.

The address chooses the backend, not the type of an object: :meth:`Workspace.over_files`
for a directory's layers, :meth:`Workspace.over_database` for a ``postgresql://`` URL.
"""

from __future__ import annotations

import os
from dataclasses import KW_ONLY, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sediment.context import ContextLoop, ContextSettings
from sediment.context.files import FileContextStore
from sediment.context.place import context_dir
from sediment.embed import Embedder
from sediment.memory import DEFAULT_DEDUP_THRESHOLD, FileMemoryStore, MemoryService
from sediment.store import LayerSet, LayerStore

if TYPE_CHECKING:
    from sediment.auth import TokenStore
    from sediment.ops.service import ContextService
    from sediment.pg.database import Database
    from sediment.pg.memory import PgMemoryStore
    from sediment.pg.tokens import PgTokenStore

__all__ = ["Places", "Workspace"]


@dataclass(frozen=True, slots=True)
class Places:
    """What the configuration says about a workspace's own data and its process: where
    actors' data lives, and whom the process acts as with which token file. The adapters
    make one from the environment (``sediment.config.places``); the servers and services
    take these values from the workspace instead of reading the environment, so the one
    configuration an adapter loaded is the only one in force."""

    data_dir: Path
    """Actors' own stores (user-scope memories, global context)."""
    dedup_threshold: float = DEFAULT_DEDUP_THRESHOLD
    context: ContextSettings = field(default_factory=ContextSettings)
    session: str = field(default_factory=lambda: str(os.getpid()))
    """The context session of this process, for ``persistence = "session"``."""
    _: KW_ONLY
    actor: str
    """Whom the process acts as: the CLI's default actor, and a server's caller without a
    bearer token (stdio, or HTTP on a server without tokens)."""
    tokens_file: Path
    """The actor tokens of a server over layer files (``sediment token``)."""


class Workspace:
    """A store, its embedder, and the services over them, built on first use.

    Use :meth:`over_files` or :meth:`over_database`; :meth:`close` releases what was built.
    """

    def __init__(self, store: LayerStore | None, embedder: Embedder, places: Places, *,
                 root: Path | None = None, layer_dir: Path | None = None,
                 database: Database | None = None) -> None:
        self._store = store
        self.embedder = embedder
        self.places = places
        self.root = root
        self.layer_dir = layer_dir
        self.database = database
        """The team database, or None over layer files."""
        self._closers: list[Any] = []

    @classmethod
    def over_files(cls, layerset: LayerSet, embedder: Embedder, places: Places, *,
                   root: Path | None = None) -> Workspace:
        """The layers of a directory; ``root`` is the project root whose manifests KCP
        reads (default: the layers' directory, where progressive context is placed)."""
        paths = [p for p in layerset.paths.values() if p is not None]
        layer_dir = paths[0].parent if paths else Path.cwd()
        return cls(layerset, embedder, places, root=root or layer_dir, layer_dir=layer_dir)

    @classmethod
    def over_database(cls, database: Database, embedder: Embedder, places: Places, *,
                      store: LayerStore | None = None) -> Workspace:
        """A team server's project: its layers, memories, context and tokens in
        ``database``, whose one pool they all share (``store``, when given, is a
        :class:`~sediment.pg.store.PgStore` over that same ``database``). The workspace
        owns the pool: :meth:`close` closes it."""
        return cls(store, embedder, places, database=database)

    @property
    def store(self) -> LayerStore:
        """The layers. Over a database given without its store, the store is opened on
        first use (the memory and context commands never need it), over the workspace's
        pool."""
        if self._store is None:
            assert self.database is not None  # over_files always has its layer set
            from sediment.pg import PgStore

            self._store = PgStore(self.database.url, database=self.database)
        return self._store

    @property
    def actor(self) -> str:
        """Whom this process acts as (:attr:`Places.actor`)."""
        return self.places.actor

    @cached_property
    def tokens(self) -> TokenStore | PgTokenStore:
        """The actor tokens a server over this workspace checks: the team database's, or
        over layer files the token file (``sediment token``)."""
        if self.database is None:
            from sediment.auth import TokenStore

            return TokenStore(self.places.tokens_file)
        from sediment.pg.tokens import PgTokenStore

        return PgTokenStore(self.database)

    @cached_property
    def service(self) -> ContextService:
        """Search, write, propose and the KCP knowledge of the project."""
        from sediment.ops.service import ContextService

        return ContextService(self.store, self.embedder, root=self.root)

    def chunk_exists(self, chunk_id: int, actor: str) -> bool:
        """Whether the project's layers hold ``chunk_id`` as a chunk ``actor`` reads by its
        id (what a memory may relate to): the port and the rules of ``store/rules.py``, the
        same on every backend (a project memory is no such chunk on either, another
        actor's local note none for ``actor``)."""
        from sediment.ops.write import readable_id

        return readable_id(self.store, chunk_id, actor)

    @cached_property
    def memories(self) -> FileMemoryStore | PgMemoryStore:
        """Where the memories live: the project's layers and each actor's own file, or the
        team database."""
        profile = self.embedder.profile
        store: FileMemoryStore | PgMemoryStore
        if self.database is not None:
            from sediment.pg.memory import PgMemoryStore

            store = PgMemoryStore(self.database, dim=profile.dim, profile=profile.to_dict())
            self._closers.append(store.close)
            return store
        files = self.store.layer_files()
        assert files is not None  # over_files made this workspace
        return FileMemoryStore(files, self.places.data_dir, profile=profile.to_dict(),
                               dim=profile.dim, embedder_metadata=self.embedder.metadata())

    @cached_property
    def memory(self) -> MemoryService:
        """The memory service (save, recall, manage; every call names its actor)."""
        service = MemoryService(self.memories, self.embedder,
                                dedup_threshold=self.places.dedup_threshold,
                                chunk_exists=self.chunk_exists)
        self._closers.insert(0, service.close)
        return service

    @cached_property
    def context(self) -> ContextLoop:
        """The progressive-context service. Over a database each call runs in its actor's
        own loop (:class:`~sediment.pg.team.TeamContextLoop`)."""
        settings = self.places.context
        if self.database is not None:
            from sediment.pg.context import PgContextStore
            from sediment.pg.team import TeamContextLoop

            team = TeamContextLoop(PgContextStore(self.database, dim=self.embedder.profile.dim),
                                   self.embedder, settings, project=self.database.project)
            self._closers.append(team.flush)
            return team
        root = self.layer_dir or Path.cwd()
        directory = context_dir(settings, root, self.places.data_dir, self.places.session)
        profile = self.embedder.profile
        store = FileContextStore(directory, profile=profile.to_dict(), dim=profile.dim,
                                 embedder_metadata=self.embedder.metadata())
        loop = ContextLoop(store, self.embedder, settings, project=root.resolve().name,
                           cache_dir=directory / "cache")
        self._closers.append(loop.flush)
        return loop

    def close(self) -> None:
        """Flush and release what this workspace built, then close the database's pool
        (once; a layer-file store itself stays open)."""
        closers, self._closers = self._closers, []
        for close in closers:
            close()
        if self.database is not None:
            self.database.close()

"""What every storage backend offers: the contract the services are written against.

Two backends implement it: :class:`~sediment.store.LayerSet` (the four layer files of a
directory) and ``sediment.pg.PgStore`` (a project in PostgreSQL). The services (write,
propose, forget, review decisions, search) take a :class:`LayerStore`, so one code path
enforces every rule over both, and ``tests/contract`` runs the same tests against each.

Reads resolve precedence (local > user > delta > base); ``transaction`` holds the
backend's writer lock for a read-check-write sequence (a file lock, or a PostgreSQL
advisory lock and one database transaction); ``append`` is one commit that gives new
chunks ids no layer uses or ever used.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from sediment.format import Chunk
from sediment.store.events import Event, ProposalState
from sediment.store.layers import AGENT_WRITABLE, LayerName

if TYPE_CHECKING:
    from sediment.store.layerset import LayerSet


@dataclass(frozen=True, slots=True)
class LayerSummary:
    """One present layer: where it lives, its size and vector schema, its first ids."""

    name: LayerName
    location: str
    chunks: int
    dim: int
    element_type: str
    profile: dict[str, Any] | None
    first_ids: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.name.value, "path": self.location, "chunks": self.chunks,
                "dim": self.dim, "element_type": self.element_type, "profile": self.profile,
                "chunk_ids": list(self.first_ids), "truncated": self.chunks > len(self.first_ids)}


@runtime_checkable
class LayerStore(Protocol):
    """The layered chunk store as the services see it (see the module docstring)."""

    def present(self, names: Iterable[LayerName] | None = None) -> list[LayerName]:
        """Layers that exist, highest precedence first."""

    def summary(self, name: LayerName, *, max_ids: int = 1000) -> LayerSummary | None:
        """The layer's summary, None when it is absent."""

    def location(self, name: LayerName) -> str:
        """Where the layer lives, for messages (a path, or the store URL and layer)."""

    def close(self) -> None:
        """Release connections (nothing to release for layer files, which map on demand)."""

    def layer_files(self) -> LayerSet | None:
        """The layer files behind this store, or None when it is not made of files.

        What only files have (KCP manifests compiled into them, signatures, byte sizes, the
        ``sources`` a compiled base records) is read through this, so no caller outside a
        backend asks which class a store is."""

    def schema(self, names: Iterable[LayerName] | None = None) -> Any:
        """The shared :class:`~sediment.store.Schema` of the present layers, or None."""

    def versions(self, chunk_id: int) -> list[tuple[LayerName, Chunk]]:
        """Every layer's version of ``chunk_id``, highest precedence first."""

    def get(self, chunk_id: int) -> tuple[LayerName, Chunk] | None:
        """The winning version of ``chunk_id``."""

    def chunk(self, name: LayerName, chunk_id: int) -> Chunk | None:
        """One layer's version of ``chunk_id``."""

    def vector(self, name: LayerName, chunk_id: int) -> npt.NDArray[np.float32]:
        """The stored (dequantised) vector of one layer's chunk (copied, not re-embedded)."""

    def chunks(self, name: LayerName) -> Iterator[tuple[Chunk, npt.NDArray[np.float32]]]:
        """Every chunk of a layer with its vector, in the layer's order."""

    def kind_counts(self, name: LayerName) -> dict[str, int]:
        """How many chunks of each kind (events included) the layer holds; {} if absent."""

    def nearest(self, name: LayerName, queries: npt.NDArray[np.float32],
                exclude: Sequence[int], threshold: float, limit: int
                ) -> list[list[tuple[float, Chunk]]]:
        """For each row of ``queries``: up to ``limit`` context chunks (not events) of the
        layer whose cosine similarity to it is at least ``threshold``, most similar first
        (ties: lower id), leaving out id ``exclude[i]``. Exact (no approximate index), so
        ``diff`` reports the same pairs on every backend."""

    def events(self, names: Iterable[LayerName] | None = None) -> list[Event]:
        """Every ``meta.*`` event of the present layers, in time order."""

    def hidden_ids(self, actor: str | None = None) -> frozenset[int]:
        """What a search of every layer by ``actor`` leaves out: superseded, forgotten,
        and local chunks another actor wrote (``store.rules``; None: a trusted local
        command, which reads every actor's). Folded once per change of a layer's events,
        not read whole per call."""

    def private_ids(self, actor: str | None) -> frozenset[int]:
        """The local chunks another actor wrote, which ``actor`` may not read by id
        (``store.rules.Reader``); as :meth:`hidden_ids`, folded once per change."""

    def proposals(self) -> dict[int, ProposalState]:
        """Every proposal's folded state."""

    def high_water(self) -> int:
        """The largest id any layer uses or ever used."""

    def transaction(self) -> AbstractContextManager[None]:
        """Hold the writer lock for a read-check-write sequence (nests)."""

    def append(self, name: LayerName, items: Sequence[Any], vectors: npt.NDArray[np.float32],
               *, profile: Any, embedder_metadata: Any = None,
               allowed: Sequence[LayerName] = AGENT_WRITABLE,
               element_type: str = "f32") -> list[int]:
        """Append ``items`` (:class:`~sediment.store.NewChunk`, one vector each) to a layer
        as one commit; return their ids."""

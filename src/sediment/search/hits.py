"""What a search returns: hits with the versions they hide and the parts of their score."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from sediment.format import Chunk, LayerFile
from sediment.store import LayerName


@dataclass(frozen=True, slots=True)
class HiddenVersion:
    layer: LayerName
    chunk: Chunk
    conflict: bool

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer.value, "conflict": self.conflict, **self.chunk.to_dict()}


class ChunkAt(NamedTuple):
    """A hit's chunk before it is decoded: position ``pos`` of ``file``'s chunk table.

    The file stays mapped while a hit refers to it, so decoding later reads the version
    that was searched even if the layer has changed on disk since. A named tuple because
    a search makes one per hit and a frozen dataclass costs twice as much to build."""

    file: LayerFile
    pos: int
    id: int


class Hit:
    """One search result. ``chunk`` may be given as a :class:`ChunkAt`, which is decoded
    on first use: a caller that reads only ids, scores and ranks (a re-ranker's first
    pass, an agent fetching ids) never pays for decoding text. Built with keyword
    arguments only: eleven fields, several of the same type, are too easy to misplace."""

    __slots__ = (
        "_chunk",
        "approximate",
        "boosts",
        "hidden",
        "id",
        "layer",
        "lexical_rank",
        "lexical_score",
        "matched_layer",
        "score",
        "vector_rank",
        "vector_score",
    )

    def __init__(self, *, layer: LayerName, chunk: Chunk | ChunkAt, score: float,
                 vector_score: float | None = None, vector_rank: int | None = None,
                 lexical_score: float | None = None, lexical_rank: int | None = None,
                 matched_layer: LayerName | None = None,
                 hidden: list[HiddenVersion] | None = None,
                 boosts: dict[str, float] | None = None, approximate: bool = False) -> None:
        self.layer = layer
        self._chunk = chunk
        self.id: int = chunk.id
        self.score = score
        self.vector_score = vector_score
        self.vector_rank = vector_rank
        self.lexical_score = lexical_score
        self.lexical_rank = lexical_rank
        self.matched_layer = matched_layer
        self.hidden: list[HiddenVersion] = [] if hidden is None else hidden
        self.boosts: dict[str, float] = {} if boosts is None else boosts
        self.approximate = approximate

    @property
    def chunk(self) -> Chunk:
        got = self._chunk
        if isinstance(got, ChunkAt):
            got = self._chunk = got.file.chunk_at(got.pos)
        return got

    def __repr__(self) -> str:
        return (f"Hit(layer={self.layer.value}, id={self.id}, score={self.score!r}, "
                f"vector_rank={self.vector_rank}, lexical_rank={self.lexical_rank}, "
                f"approximate={self.approximate})")

    @property
    def conflicts(self) -> list[HiddenVersion]:
        return [h for h in self.hidden if h.conflict]

    def explanation(self) -> dict[str, Any]:
        return {
            "layer": self.layer.value,
            "matched_layer": (self.matched_layer or self.layer).value,
            "vector_score": self.vector_score,
            "vector_rank": self.vector_rank,
            "bm25_score": self.lexical_score,
            "bm25_rank": self.lexical_rank,
            "fused_score": self.score,
            "approximate": self.approximate,
            "boosts": dict(self.boosts),
            "hidden_versions": [f"{h.layer.value}:{h.chunk.id}" for h in self.hidden],
        }

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"layer": self.layer.value, "score": self.score,
                               **self.chunk.to_dict()}
        out["conflicts"] = [h.to_dict() for h in self.conflicts]
        if explain:
            out["explain"] = self.explanation()
        return out


Reranker = Callable[[list[Hit]], list[Hit]]
"""A domain hook (memory recency, KCP triggers) that may re-score and reorder hits."""

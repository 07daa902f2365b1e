"""The layers the PostgreSQL tests start from: written as files, pushed where needed."""

from __future__ import annotations

from pathlib import Path

from sediment.embed.hashing import HashEmbedder
from sediment.format import Chunk, encode_layer
from sediment.store.ids import WRITTEN_START

DIM = 64
EMBEDDER = HashEmbedder(DIM)
BASE_TEXTS = [
    "Layers override each other by precedence: local, then user, then delta, then base.",
    "The base layer is compiled from Markdown and never written at run time.",
    "Agents write notes to the local layer and propose them for review.",
    "A reviewer accepts a proposal, which copies the chunk into the user layer.",
    "Search fuses vector similarity with BM25 keyword scores.",
    "Every state change is an append-only event chunk whose sources name its subject.",
    "The hash embedder is deterministic and needs no model.",
    "Ids are never reused, even after a chunk is forgotten.",
]


def _layer(path: Path, chunks: list[Chunk], element_type: str = "f32") -> None:
    vecs = EMBEDDER.embed([c.content for c in chunks])
    md = {"v": 1, "embedding_profile": EMBEDDER.profile.to_dict()}
    scale = 1.0 / 127.0 if element_type == "i8" else None
    path.write_bytes(encode_layer(chunks, vecs, dim=DIM, metadata=md,
                                  element_type=element_type, quant_scale=scale))


def build_layers(directory: Path, element_type: str = "f32") -> Path:
    """A base of eight chunks; user overrides chunk 2; delta holds a different version of
    chunk 3 (a conflict); local holds one agent note."""
    _layer(directory / "AGENTS.db",
           [Chunk(i, "canonical", t, "human", 1.0, 1000 + i, (f"docs/a.md:{i}",))
            for i, t in enumerate(BASE_TEXTS, 1)], element_type)
    _layer(directory / "AGENTS.user.db",
           [Chunk(2, "canonical", "The base layer is compiled from Markdown sources by "
                  "sediment compile; it is immutable.", "human", 1.0, 5000, (2,))],
           element_type)
    _layer(directory / "AGENTS.delta.db",
           [Chunk(3, "note", "Agents write notes to the delta layer directly.", "mcp", 0.6,
                  6000, (3,))], element_type)
    _layer(directory / "AGENTS.local.db",
           [Chunk(WRITTEN_START + 7, "note", "A local note about BM25 tuning: k1 0.9, b 0.4.",
                  "mcp", 0.5, 7000, ())], element_type)
    return directory

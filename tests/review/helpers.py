"""Build real layer files for review tests: a compiled-like base and agent writes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sediment.embed import HashEmbedder
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.ops import WriteRequest, write_context
from sediment.ops.propose import propose
from sediment.store import LayerName, LayerSet

EMB = HashEmbedder(dim=64)

BASE_DOCS = (
    "Requests to /billing MUST include the X-Account header.",
    "The deploy job pushes containers to the staging cluster every night.",
    "Database migrations run with alembic before the web server starts.",
)


def make_base(directory: Path, docs: Sequence[str] = BASE_DOCS, *, etype: str = "f32",
              name: str = "AGENTS.db") -> Path:
    chunks = [Chunk(i, "canonical", text, "human", 1.0, 0, (f"docs/guide.md:{i}",))
              for i, text in enumerate(docs, 1)]
    md = {"v": 1, "embedding_profile": EMB.profile.to_dict(), "id_high_water": len(chunks)}
    scale = 1.0 / 127.0 if etype == "i8" else None
    path = directory / name
    path.write_bytes(encode_layer(chunks, EMB.embed(list(docs)), dim=EMB.profile.dim,
                                  element_type=etype, quant_scale=scale, metadata=md))
    return path


def agent_write(ls: LayerSet, content: str, *, scope: str = "delta", kind: str = "note",
                confidence: float = 0.7, sources: Sequence[object] = ()) -> int:
    request = WriteRequest(content=content, kind=kind, confidence=confidence,
                           sources=list(sources), scope=scope)  # type: ignore[arg-type]
    return write_context(ls, EMB, request, actor="tester")


def agent_propose(ls: LayerSet, content: str, **kw: object) -> tuple[int, int]:
    """Write a chunk to delta and propose it; return (chunk id, proposal id)."""
    cid = agent_write(ls, content, **kw)  # type: ignore[arg-type]
    return cid, propose(ls, cid, actor="tester").proposal_id


def layer(directory: Path, name: LayerName) -> LayerFile:
    return LayerFile.open(directory / name.file_name)

"""Files written by the reference implementation (another language, another writer)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from sediment.format import LayerFile
from tests.conftest import shared

INTEROP = shared("interop", "agentsdb-reference")


def test_files_are_the_published_ones() -> None:
    expected = {
        "AGENTS.db": "67b0d6debdd2fe88e6dc6aa4acc3f82f2cf591c6258bb99e93c97fcb093a0840",
        "AGENTS.user.db": "15c594e3450791a61978d6d8c03d98be9e6346981b358b534605aa973064ef4b",
        "AGENTS.delta.db": "7b017c679dfa285760a1a1bd3839e72b0fb30d47f7644b9709679fe09ed61594",
    }
    for name, digest in expected.items():
        assert hashlib.sha256((INTEROP / name).read_bytes()).hexdigest() == digest


def test_base_layer() -> None:
    f = LayerFile.open(INTEROP / "AGENTS.db")
    assert f.validate() == []
    assert (f.chunk_count, f.dim, f.element_type) == (12, 384, "f32")
    assert f.metadata is None
    chunks = list(f.chunks())
    kinds = [c.kind for c in chunks]
    assert kinds.count("canonical") == 9 and kinds.count("options") == 2
    assert kinds.count("tombstone") == 1
    assert {c.author for c in chunks} == {"human"}
    by_id = {c.id: c for c in chunks}
    assert by_id[2].sources == ("docs/WORKFLOW.md:1",)
    assert by_id[1589018953].sources == (1589018952,)
    assert by_id[1589018952].content.startswith("# Embedding Helpers Architecture")


def test_delta_layer_profile_and_unaligned_matrix() -> None:
    f = LayerFile.open(INTEROP / "AGENTS.delta.db")
    assert f.validate() == []
    assert f.chunk_count == 8 and f.dim == 384
    assert f.embedding_info.data_offset % 4 != 0
    assert f.embedding_profile == {"backend": "candle", "model": "all-minilm-l6-v2",
                                   "revision": "main", "dim": 384, "output_norm": "none"}
    chunks = {c.id: c for c in f.chunks()}
    assert {c.author for c in chunks.values()} == {"human", "mcp"}
    assert chunks[4].sources == ("crates/agentsdb-format/src/reader.rs:182",
                                 "crates/agentsdb-cli/src/commands/compact.rs:153")
    assert chunks[648907830].kind == "tombstone" and chunks[648907830].sources == (18,)
    assert chunks[5].confidence == pytest.approx(0.95)
    norms = np.linalg.norm(np.asarray(f.embeddings, dtype=np.float64), axis=1)
    assert norms.min() > 1.5  # the reference writer does not normalise


def test_user_layer() -> None:
    f = LayerFile.open(INTEROP / "AGENTS.user.db")
    assert f.validate() == []
    chunks = list(f.chunks())
    assert len(chunks) == 4 and f.dim == 384
    assert [c.kind for c in chunks] == ["technical-note", "bugfix", "technical-documentation",
                                        "canonical"]
    assert chunks[2].sources == ("crates/agentsdb-cli/src/commands/search.rs",
                                 "crates/agentsdb-ops/src/search.rs",
                                 "crates/agentsdb-query/src/lib.rs")


def test_embeddings_are_views_of_the_mapping() -> None:
    f = LayerFile.open(INTEROP / "AGENTS.db")
    emb = f.embeddings
    assert not emb.flags.owndata and not emb.flags.writeable
    assert emb.shape == (12, 384)

"""One profile type and one compatibility rule, used by every place that compares profiles.

The four places (layers searched together, an append, a text query, a compaction) all go
through ``sediment.format.profile.check_compatible``; each mismatch names both sides and
both profiles, and a side without a recorded profile is compatible.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import sediment.embed
import sediment.embed.profile
from sediment.embed import HashEmbedder
from sediment.errors import SchemaMismatchError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.format.profile import (
    PROFILE_KEYS,
    EmbeddingProfile,
    check_compatible,
    describe_profile,
)
from sediment.ops.query import check_profile
from sediment.review.compact import check_schema
from sediment.store import HUMAN_WRITABLE, LayerName, LayerSet, NewChunk

EMB = HashEmbedder(dim=8)
OTHER = {**EMB.profile.to_dict(), "output_norm": "none"}


def layer(path: Path, profile: dict[str, object] | None, cid: int = 1) -> Path:
    md = {"v": 1, "embedding_profile": profile} if profile is not None else {"v": 1}
    chunks = [Chunk(cid, "note", f"chunk {cid}", "human", 1.0, 0)]
    path.write_bytes(encode_layer(chunks, EMB.embed([c.content for c in chunks]),
                                  metadata=md))
    return path


def both_profiles(exc: pytest.ExceptionInfo[SchemaMismatchError]) -> None:
    message = str(exc.value)
    assert describe_profile(EMB.profile) in message and describe_profile(OTHER) in message
    assert "output_norm: " in message


def test_the_profile_type_is_defined_once() -> None:
    assert sediment.embed.EmbeddingProfile is EmbeddingProfile
    assert sediment.embed.profile.CACHE_KEY_ALG == sediment.embed.CACHE_KEY_ALG
    assert PROFILE_KEYS == ("embedding_profile", "cache_key_alg", "embedder_metadata")


def test_check_compatible() -> None:
    check_compatible(EMB.profile, EMB.profile.to_dict(), a_name="a", b_name="b",
                     consequence="c")
    check_compatible(None, OTHER, a_name="a", b_name="b", consequence="c")
    with pytest.raises(SchemaMismatchError, match=r"^layer x uses embedding profile .* but "
                                                  r"layer y uses .*; so what$") as exc:
        check_compatible(EMB.profile, OTHER, a_name="layer x", b_name="layer y",
                         consequence="so what")
    both_profiles(exc)


def test_layers_searched_together(tmp_path: Path) -> None:
    layer(tmp_path / "AGENTS.db", EMB.profile.to_dict())
    layer(tmp_path / "AGENTS.local.db", OTHER, cid=2)
    with pytest.raises(SchemaMismatchError, match=r"layer local .* layer base") as exc:
        LayerSet.from_directory(tmp_path).schema()
    both_profiles(exc)


def test_append_and_query_with_another_embedder(tmp_path: Path) -> None:
    layer(tmp_path / "AGENTS.db", OTHER)
    ls = LayerSet.from_directory(tmp_path)
    with pytest.raises(SchemaMismatchError, match="active embedder") as exc:
        ls.append(LayerName.USER, [NewChunk("note", "x", "human", 1.0)], EMB.embed(["x"]),
                  profile=EMB.profile.to_dict(), allowed=HUMAN_WRITABLE)
    both_profiles(exc)
    assert not (tmp_path / "AGENTS.user.db").exists()
    with pytest.raises(SchemaMismatchError, match="active embedder") as exc:
        check_profile(ls, EMB, None)
    both_profiles(exc)


def test_compaction(tmp_path: Path) -> None:
    base = LayerFile.open(layer(tmp_path / "AGENTS.db", EMB.profile.to_dict()))
    user = LayerFile.open(layer(tmp_path / "AGENTS.user.db", OTHER, cid=2))
    with pytest.raises(SchemaMismatchError, match="cannot be compacted") as exc:
        check_schema(base, user)
    both_profiles(exc)
    check_schema(base, LayerFile.open(layer(tmp_path / "none.db", None, cid=3)))


def test_profiles_equal_as_objects_and_as_recorded_mappings() -> None:
    recorded = EmbeddingProfile(**OTHER)  # type: ignore[arg-type]
    check_compatible(recorded, OTHER, a_name="a", b_name="b", consequence="c")

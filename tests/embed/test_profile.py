from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sediment.embed import CACHE_KEY_ALG, EmbeddingProfile
from sediment.errors import ValidationError

MINILM = EmbeddingProfile(
    backend="onnxruntime",
    model="sentence-transformers/all-MiniLM-L6-v2",
    revision="int8-8199be6f699a",
    dim=384,
    output_norm="l2",
)
NULLS = EmbeddingProfile(backend="hash", model=None, revision=None, dim=8, output_norm="none")


def test_cache_key_matches_hand_built_bytes() -> None:
    content = "Déjà vu: 🦀 rust"
    expected = hashlib.sha256(
        b'{"v":1,"backend":"onnxruntime","model":"sentence-transformers/all-MiniLM-L6-v2",'
        b'"revision":"int8-8199be6f699a","dim":384}'
        + b"\x00"
        + content.encode("utf-8")
    ).digest()
    assert MINILM.cache_key(content) == expected


def test_cache_key_with_null_model_and_revision() -> None:
    expected = hashlib.sha256(
        b'{"v":1,"backend":"hash","model":null,"revision":null,"dim":8}\x00hello'
    ).digest()
    assert NULLS.cache_key("hello") == expected
    assert NULLS.cache_key("") == hashlib.sha256(
        b'{"v":1,"backend":"hash","model":null,"revision":null,"dim":8}\x00'
    ).digest()


def test_cache_key_keeps_non_ascii_profile_fields_as_utf8() -> None:
    p = EmbeddingProfile(backend="local", model="modèle", revision=None, dim=3, output_norm="l2")
    prefix = '{"v":1,"backend":"local","model":"modèle","revision":null,"dim":3}'.encode()
    assert p.cache_key("x") == hashlib.sha256(prefix + b"\x00x").digest()


def test_cache_key_is_pinned() -> None:
    """Guards against the algorithm and this test drifting together."""
    assert NULLS.cache_key("hello").hex() == (
        hashlib.sha256(
            b'{"v":1,"backend":"hash","model":null,"revision":null,"dim":8}\x00hello'
        ).hexdigest()
    )
    assert len(MINILM.cache_key("a")) == 32
    assert CACHE_KEY_ALG == "sha256(profile_json_v1 || 0x00 || content_utf8)"


def test_output_norm_is_not_part_of_the_rfc_key() -> None:
    assert replace(NULLS, output_norm="l2").cache_key("a") == NULLS.cache_key("a")


def test_lone_surrogate_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="surrogate"):
        NULLS.cache_key("bad \ud800")


def test_to_dict_order_and_round_trip() -> None:
    d = MINILM.to_dict()
    assert list(d) == ["backend", "model", "revision", "dim", "output_norm"]
    assert EmbeddingProfile(**json.loads(json.dumps(d))) == MINILM
    assert EmbeddingProfile(**NULLS.to_dict()) == NULLS


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"backend": ""}, "backend"),
        ({"backend": None}, "backend"),
        ({"model": 3}, "model"),
        ({"revision": ""}, "revision"),
        ({"dim": "384"}, "dim"),
        ({"dim": 0}, "dim"),
        ({"dim": True}, "dim"),
        ({"dim": 3.0}, "dim"),
        ({"output_norm": None}, "output_norm"),
    ],
)
def test_a_bad_field_is_named(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError, match=f"'{field}'"):
        EmbeddingProfile(**{**MINILM.to_dict(), **change})


def test_matches_lists_differing_fields() -> None:
    assert MINILM.matches(MINILM) == []
    other = replace(MINILM, revision="int8-000000000000", dim=768)
    assert MINILM.matches(other) == ["revision", "dim"]
    assert MINILM.matches(NULLS) == ["backend", "model", "revision", "dim", "output_norm"]


def test_describe() -> None:
    text = MINILM.describe()
    assert "onnxruntime" in text and "all-MiniLM-L6-v2" in text and "384" in text
    assert NULLS.describe() == "hash (8d, none)"


names = st.text(min_size=1, max_size=20)
profiles = st.builds(
    EmbeddingProfile,
    backend=names,
    model=st.none() | names,
    revision=st.none() | names,
    dim=st.integers(min_value=1, max_value=100_000),
    output_norm=st.sampled_from(["l2", "none"]) | names,
)


@given(profiles)
def test_round_trip_property(p: EmbeddingProfile) -> None:
    assert EmbeddingProfile(**p.to_dict()) == p
    assert EmbeddingProfile(**json.loads(json.dumps(p.to_dict()))) == p


@given(profiles, st.sampled_from(["backend", "model", "revision", "dim"]), st.data(), st.text())
def test_keys_differ_when_a_keyed_field_differs(
    p: EmbeddingProfile, field: str, data: st.DataObject, content: str
) -> None:
    if field == "dim":
        new: object = data.draw(st.integers(min_value=1, max_value=100_000).filter(
            lambda d: d != p.dim))
    elif field == "backend":
        new = data.draw(names.filter(lambda s: s != p.backend))
    else:
        new = data.draw((st.none() | names).filter(lambda s: s != getattr(p, field)))
    q = EmbeddingProfile(**{**p.to_dict(), field: new})
    assert p.matches(q) == [field]
    assert p.cache_key(content) != q.cache_key(content)

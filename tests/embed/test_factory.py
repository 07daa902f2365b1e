from __future__ import annotations

from pathlib import Path

import pytest

import sediment.embed as embed_pkg
from sediment.embed import (
    EMBEDDER_NAMES,
    CachedEmbedder,
    Embedder,
    HashEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    make_embedder,
    profile_for,
)
from sediment.errors import ConfigError


def test_default_is_minilm_and_lazy() -> None:
    e = make_embedder()
    assert isinstance(e, MiniLMEmbedder) and isinstance(e, Embedder)
    assert not e.loaded


def test_hash() -> None:
    e = make_embedder("hash")
    assert isinstance(e, HashEmbedder) and e.profile.dim == 384
    assert make_embedder("HASH", dim=32).profile.dim == 32


def test_openai() -> None:
    e = make_embedder(
        "openai", base_url="http://localhost:11434/v1", model="nomic-embed-text", dim=768,
        api_key="k",
    )
    assert isinstance(e, OpenAIEmbedder)
    assert e.url == "http://localhost:11434/v1/embeddings"
    assert e.profile.model == "nomic-embed-text" and e.profile.dim == 768


def test_openai_requires_its_options() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        make_embedder("openai", model="m", dim=3)
    with pytest.raises(ConfigError, match="base_url"):
        make_embedder("openai", base_url="http://x/v1", model="m")


def test_invalid_values_become_config_errors() -> None:
    with pytest.raises(ConfigError, match="'openai'"):
        make_embedder("openai", base_url="not a url", model="m", dim=3)
    with pytest.raises(ConfigError, match="'hash'"):
        make_embedder("hash", dim=0)
    with pytest.raises(ConfigError, match="384"):
        make_embedder("minilm", dim=768)


def test_unknown_name_lists_valid_names() -> None:
    with pytest.raises(ConfigError) as info:
        make_embedder("bert-large")
    message = str(info.value)
    assert "bert-large" in message
    for name in EMBEDDER_NAMES:
        assert name in message


@pytest.mark.parametrize("name", ["hash", "minilm"])
def test_inapplicable_options_are_rejected(name: str) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        make_embedder(name, base_url="http://localhost:11434/v1")
    with pytest.raises(ConfigError, match="api_key"):
        make_embedder(name, api_key="k")


def test_cache_path_wraps_in_cache(tmp_path: Path) -> None:
    e = make_embedder("hash", dim=16, cache_path=tmp_path / "emb.sqlite")
    assert isinstance(e, CachedEmbedder) and isinstance(e.inner, HashEmbedder)
    e.embed(["a"])
    e.close()
    assert (tmp_path / "emb.sqlite").exists()


def test_profile_for() -> None:
    assert profile_for("hash", dim=8) == HashEmbedder(8).profile
    p = profile_for()
    assert p.backend == "onnxruntime" and p.dim == 384
    assert profile_for("openai", base_url="https://h/v1", model="m", dim=5).model == "m"


def test_package_all_is_importable() -> None:
    for name in embed_pkg.__all__:
        assert hasattr(embed_pkg, name), name

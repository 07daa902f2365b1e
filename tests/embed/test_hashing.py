from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest

from sediment.embed import Embedder, HashEmbedder, Matrix
from sediment.errors import ValidationError

TEXTS = [
    "The layer file is memory-mapped for fast search",
    "Search over memory-mapped layer files is fast",
    "My grandmother bakes apple pie every Sunday",
    "Ünïcödé wörds and 日本語 text",
    "",
]

_CHILD = """
import hashlib, sys
from sediment.embed import HashEmbedder
texts = sys.stdin.read().split("\\x1e")
print(hashlib.sha256(HashEmbedder(64).embed(texts).tobytes()).hexdigest())
"""


def _digest(matrix: Matrix) -> str:
    return hashlib.sha256(matrix.tobytes()).hexdigest()


def test_is_an_embedder_with_profile() -> None:
    e = HashEmbedder()
    assert isinstance(e, Embedder)
    p = e.profile
    assert (p.backend, p.model, p.revision, p.dim, p.output_norm) == (
        "hash", "sediment-hash-v1", "1", 384, "l2"
    )
    assert "blake2b" in e.metadata()["algorithm"]


def test_shape_dtype_and_norm() -> None:
    v = HashEmbedder(dim=64).embed(TEXTS)
    assert v.shape == (len(TEXTS), 64)
    assert v.dtype == np.float32 and v.flags.c_contiguous
    norms = np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(norms[:-1], 1.0, atol=1e-6)
    assert norms[-1] == 0.0
    assert np.isfinite(v).all()


def test_empty_input() -> None:
    v = HashEmbedder(dim=32).embed([])
    assert v.shape == (0, 32) and v.dtype == np.float32


def test_rejects_a_bare_string() -> None:
    with pytest.raises(ValidationError, match="single string"):
        HashEmbedder().embed("hello")


@pytest.mark.parametrize("dim", [0, -1, True])
def test_rejects_bad_dim(dim: int) -> None:
    with pytest.raises(ValidationError):
        HashEmbedder(dim)


def test_deterministic_across_instances_and_order() -> None:
    a = HashEmbedder(64).embed(TEXTS)
    b = HashEmbedder(64).embed(list(reversed(TEXTS)))[::-1]
    assert np.array_equal(a, b)


def test_deterministic_across_processes(subprocess_env: dict[str, str]) -> None:
    expected = _digest(HashEmbedder(64).embed(TEXTS))
    for seed in ("1", "2"):
        env = {**subprocess_env, "PYTHONHASHSEED": seed, "PYTHONIOENCODING": "utf-8"}
        done = subprocess.run(
            [sys.executable, "-c", _CHILD], input="\x1e".join(TEXTS), env=env,
            capture_output=True, encoding="utf-8", timeout=60, check=True,
        )
        assert done.stdout.strip() == expected


def test_shared_words_score_higher_than_unrelated() -> None:
    v = HashEmbedder().embed(TEXTS[:3])
    related, unrelated = float(v[0] @ v[1]), float(v[0] @ v[2])
    assert related > 0.5
    assert related > unrelated + 0.3


def test_case_insensitive() -> None:
    v = HashEmbedder().embed(["Index the LAYERS", "index the layers"])
    assert float(v[0] @ v[1]) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    ("word", "inflected", "unrelated"),
    [("index", "indexes", "zebra"), ("layer", "layers", "apple"),
     ("embedding", "embeddings", "weather")],
)
def test_trigrams_match_inflections(word: str, inflected: str, unrelated: str) -> None:
    v = HashEmbedder().embed([word, inflected, unrelated])
    assert float(v[0] @ v[1]) > 0.15
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.1

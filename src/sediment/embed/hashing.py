"""A deterministic, offline feature-hashing embedder for tests and model-free setups.

Each lowercase word and each boundary-marked character trigram of each word is hashed with
BLAKE2b (stable across processes, unlike the salted built-in ``hash``) to a bucket and a sign.
Texts that share words therefore share buckets and get a high cosine, and trigrams give some
tolerance to inflection ("index" / "indexes"), which makes it usable for lexical search in tests.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from sediment.embed.base import Matrix, check_texts, empty_matrix, l2_normalize
from sediment.embed.profile import EmbeddingProfile
from sediment.errors import ValidationError

__all__ = ["HashEmbedder"]

_WORD = re.compile(r"\w+")
#: L2 norm of one word's trigram features relative to its whole-word feature (1.0): enough
#: for "index" to match "indexes", small enough that whole words dominate.
_TRIGRAM_WEIGHT = 0.7


@lru_cache(maxsize=65536)
def _word_features(word: str, dim: int) -> tuple[tuple[int, float], ...]:
    """(bucket, signed weight) pairs for one word; cached because words repeat a lot."""
    padded = f"<{word}>"
    grams = [padded[i : i + 3] for i in range(len(padded) - 2)]
    gram_weight = _TRIGRAM_WEIGHT / math.sqrt(len(grams))
    features = [_bucket("w", word, dim, 1.0)]
    features.extend(_bucket("t", g, dim, gram_weight) for g in grams)
    return tuple(features)


def _bucket(kind: str, feature: str, dim: int, weight: float) -> tuple[int, float]:
    digest = hashlib.blake2b(f"{kind}:{feature}".encode(), digest_size=8).digest()
    h = int.from_bytes(digest, "little")
    sign = 1.0 if h >> 63 else -1.0
    return (h % dim, sign * weight)


class HashEmbedder:
    """Feature-hashing embedder: same text, same vector, on any machine, with no model."""

    def __init__(self, dim: int = 384) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise ValidationError(f"hash embedder dim must be a positive integer, got {dim!r}")
        self._profile = EmbeddingProfile(
            backend="hash", model="sediment-hash-v1", revision="1", dim=dim, output_norm="l2"
        )

    @property
    def profile(self) -> EmbeddingProfile:
        return self._profile

    def embed(self, texts: Sequence[str]) -> Matrix:
        items = check_texts(texts)
        dim = self._profile.dim
        if not items:
            return empty_matrix(dim)
        out = np.zeros((len(items), dim), dtype=np.float64)
        for row, text in enumerate(items):
            vec = out[row]
            for word in _WORD.findall(text.lower()):
                for bucket, weight in _word_features(word, dim):
                    vec[bucket] += weight
        return l2_normalize(out)

    def metadata(self) -> dict[str, Any]:
        return {
            "runtime": "sediment hash embedder",
            "algorithm": "blake2b-64 signed feature hashing of lowercase \\w+ words (weight 1) "
            f"and their <>-padded character trigrams (joint L2 weight {_TRIGRAM_WEIGHT})",
        }

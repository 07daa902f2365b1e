"""Embeddings: the Embedder contract, its profiles and backends, and the on-disk cache.

Backends: :class:`MiniLMEmbedder` (default, local ONNX), :class:`HashEmbedder` (deterministic,
for tests) and :class:`OpenAIEmbedder` (any OpenAI-compatible HTTP server). Importing this
package loads no model and opens no connection.
"""

from sediment.embed.base import Embedder, Matrix, l2_normalize
from sediment.embed.cache import CachedEmbedder, EmbeddingCache
from sediment.embed.factory import (
    DEFAULT_EMBEDDER,
    EMBEDDER_NAMES,
    embedder_for_profile,
    make_configured,
    make_embedder,
    profile_for,
)
from sediment.embed.hashing import HashEmbedder
from sediment.embed.minilm import MiniLMEmbedder
from sediment.embed.openai import OpenAIEmbedder
from sediment.embed.profile import CACHE_KEY_ALG, PROFILE_FIELDS, EmbeddingProfile

__all__ = [
    "CACHE_KEY_ALG",
    "DEFAULT_EMBEDDER",
    "EMBEDDER_NAMES",
    "PROFILE_FIELDS",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingProfile",
    "HashEmbedder",
    "Matrix",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "embedder_for_profile",
    "l2_normalize",
    "make_configured",
    "make_embedder",
    "profile_for",
]

"""The embedding profile, as the embedders use it.

It is defined in :mod:`sediment.format.profile`, beside the layer metadata that records it,
so that the store can check layers with it too; this module only re-exports it.
"""

from sediment.format.profile import CACHE_KEY_ALG, PROFILE_FIELDS, EmbeddingProfile

__all__ = ["CACHE_KEY_ALG", "PROFILE_FIELDS", "EmbeddingProfile"]

"""Sediment: a layered, append-only context store and memory server for AI agents."""

from sediment.errors import (
    ConfigError,
    EmbeddingError,
    FormatError,
    LockTimeoutError,
    NotFoundError,
    PermissionDeniedError,
    SchemaMismatchError,
    SedimentError,
    SignatureError,
    ValidationError,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "EmbeddingError",
    "FormatError",
    "LockTimeoutError",
    "NotFoundError",
    "PermissionDeniedError",
    "SchemaMismatchError",
    "SedimentError",
    "SignatureError",
    "ValidationError",
    "__version__",
]

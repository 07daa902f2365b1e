"""The embedding profile: the compatibility contract between layers and embedders (RFC 8.4.8).

Two vector sets can be compared only when they come from the same profile, so the profile is
written into every layer's metadata, checked on every write and query, and hashed into every
cache key (RFC 9.1). It lives beside the format because layers record it: the store checks
layers against each other, embedders describe themselves with it, and both use
:func:`check_compatible`, the one rule for when two profiles may be used together.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

from sediment.errors import SchemaMismatchError, ValidationError

__all__ = ["CACHE_KEY_ALG", "I8_SCALE", "PROFILE_FIELDS", "PROFILE_KEYS", "EmbeddingProfile",
           "check_compatible", "describe_profile", "new_element_type", "profile_differences",
           "quant_scale", "unit_vectors"]

#: Identifies the cache-key algorithm in layer metadata (``cache_key_alg``).
CACHE_KEY_ALG = "sha256(profile_json_v1 || 0x00 || content_utf8)"

#: The fields of ``embedding_profile``, in the order they are written.
PROFILE_FIELDS: tuple[str, ...] = ("backend", "model", "revision", "dim", "output_norm")

#: The layer metadata keys that describe how the vectors were made; they travel with the
#: vectors (compaction, JSONL export and import).
PROFILE_KEYS: tuple[str, ...] = ("embedding_profile", "cache_key_alg", "embedder_metadata")


@dataclass(frozen=True)
class EmbeddingProfile:
    """What produced a set of vectors; equal profiles mean comparable vectors.

    ``model`` and ``revision`` may be None for backends that have neither (the RFC allows
    null). ``output_norm`` is explicit (``"l2"`` or ``"none"``) because normalisation changes
    scores and therefore what "the same vectors" means.
    """

    backend: str
    model: str | None
    revision: str | None
    dim: int
    output_norm: str

    def __post_init__(self) -> None:
        _check_text("backend", self.backend, nullable=False)
        _check_text("model", self.model, nullable=True)
        _check_text("revision", self.revision, nullable=True)
        if isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim <= 0:
            raise ValidationError(
                f"embedding profile field 'dim' must be a positive integer, got {self.dim!r}"
            )
        _check_text("output_norm", self.output_norm, nullable=False)

    def to_dict(self) -> dict[str, Any]:
        """The ``embedding_profile`` object of layer metadata, keys in RFC order (the
        fields' order)."""
        return asdict(self)

    def describe(self) -> str:
        """A one-line summary for messages, e.g. ``onnxruntime:all-MiniLM@int8-... (384d, l2)``."""
        name = self.backend
        if self.model is not None:
            name += f":{self.model}"
        if self.revision is not None:
            name += f"@{self.revision}"
        return f"{name} ({self.dim}d, {self.output_norm})"

    def matches(self, other: EmbeddingProfile) -> list[str]:
        """Names of the fields that differ from ``other``; empty when compatible."""
        return [f for f in PROFILE_FIELDS if getattr(self, f) != getattr(other, f)]

    @cached_property
    def _key_prefix(self) -> bytes:
        """``profile_json_v1 || 0x00``, computed once per profile.

        Compact separators and ``ensure_ascii=False`` give the shortest canonical UTF-8 form;
        RFC 9.1 fixes the key order but not the whitespace or escaping, so this choice is part
        of ``CACHE_KEY_ALG`` and must never change for existing caches to stay valid.
        """
        obj = {
            "v": 1,
            "backend": self.backend,
            "model": self.model,
            "revision": self.revision,
            "dim": self.dim,
        }
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\0"

    def cache_key(self, content: str) -> bytes:
        """RFC 9.1 key: ``sha256(profile_json_v1 || 0x00 || content_utf8)`` (32 bytes).

        ``output_norm`` is not part of the RFC's profile JSON, so it is not hashed here.
        """
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationError(f"text is not valid Unicode (lone surrogate?): {exc}") from exc
        return hashlib.sha256(self._key_prefix + data).digest()


def _check_text(name: str, value: object, *, nullable: bool) -> None:
    if value is None and nullable:
        return
    if not isinstance(value, str) or not value:
        kind = "a non-empty string or null" if nullable else "a non-empty string"
        raise ValidationError(f"embedding profile field '{name}' must be {kind}, got {value!r}")


ProfileLike = EmbeddingProfile | Mapping[str, Any]
"""A profile object, or the ``embedding_profile`` mapping a layer's metadata records."""


def _fields(p: ProfileLike) -> Mapping[str, Any]:
    return p.to_dict() if isinstance(p, EmbeddingProfile) else p


I8_SCALE = 1.0 / 127.0
"""The scale of an i8 layer of unit vectors: every component lies in [-1, 1]."""


def unit_vectors(profile: Mapping[str, Any] | None) -> bool:
    """Whether the embedder of ``profile`` (a layer's recorded ``embedding_profile``)
    returns unit vectors: then a dot product is the cosine, and i8 at :data:`I8_SCALE`
    holds every component. Every writer and searcher asks here."""
    return (profile or {}).get("output_norm") == "l2"


def new_element_type(profile: Mapping[str, Any] | None) -> str:
    """What a new store of ``profile``'s vectors holds them as, when nothing else decides:
    i8 for unit vectors (a quarter of f32's bytes, the cosine within rounding), else f32."""
    return "i8" if unit_vectors(profile) else "f32"


def quant_scale(element_type: str, profile: Mapping[str, Any] | None) -> float | None:
    """The i8 scale a new layer of ``element_type`` records: :data:`I8_SCALE` for unit
    vectors, None otherwise (f32 and f16 have none; the codec scales other i8 itself)."""
    return I8_SCALE if element_type == "i8" and unit_vectors(profile) else None


def profile_differences(a: ProfileLike, b: ProfileLike) -> list[str]:
    """``field: a vs b`` for each profile field that differs; empty when compatible."""
    fa, fb = _fields(a), _fields(b)
    return [f"{k}: {fa.get(k)!r} vs {fb.get(k)!r}" for k in PROFILE_FIELDS
            if fa.get(k) != fb.get(k)]


def describe_profile(p: ProfileLike | None) -> str:
    """One line for messages, e.g. ``hash/None@None dim=8 norm=l2``."""
    if not p:
        return "no recorded profile"
    f = _fields(p)
    return (f"{f.get('backend')}/{f.get('model')}@{f.get('revision')} "
            f"dim={f.get('dim')} norm={f.get('output_norm')}")


def check_compatible(a: ProfileLike | None, b: ProfileLike | None, *, a_name: str,
                     b_name: str, consequence: str) -> None:
    """Raise SchemaMismatchError when ``a`` and ``b`` differ, naming both and both profiles.

    Vectors are comparable only when every field of :data:`PROFILE_FIELDS` is equal. A side
    with no recorded profile (None, e.g. a layer another tool wrote without metadata) is
    compatible with anything: its dimension is checked as part of the schema instead.
    ``consequence`` says what cannot be done and, where there is one, the way out.
    """
    if a is None or b is None:
        return
    diff = profile_differences(a, b)
    if diff:
        raise SchemaMismatchError(
            f"{a_name} uses embedding profile {describe_profile(a)} but {b_name} uses "
            f"{describe_profile(b)} ({'; '.join(diff)}); {consequence}")

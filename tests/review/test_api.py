"""The review package's public API: ``__all__`` names everything public, and only that."""

from __future__ import annotations

import types

import sediment.review as review
from sediment.errors import PermissionDeniedError


def test_all_is_complete() -> None:
    public = {n for n, v in vars(review).items()
              if not n.startswith("_") and not isinstance(v, types.ModuleType)
              and getattr(v, "__module__", "").startswith("sediment")}
    assert public <= set(review.__all__), public - set(review.__all__)
    assert all(hasattr(review, n) for n in review.__all__)
    assert issubclass(review.SignatureError, PermissionDeniedError)

"""``sediment.kcp.__all__`` names every public object of the package and nothing else."""

from __future__ import annotations

import types

import sediment.kcp as kcp


def test_all_is_complete_and_exists() -> None:
    public = {n for n, v in vars(kcp).items() if not n.startswith("_")
              and not isinstance(v, types.ModuleType)
              and getattr(v, "__module__", "").startswith("sediment")}
    assert public <= set(kcp.__all__), public - set(kcp.__all__)
    assert all(hasattr(kcp, n) for n in kcp.__all__)


def test_errors_are_validation_errors() -> None:
    from sediment.errors import ValidationError

    assert issubclass(kcp.ManifestError, ValidationError)
    assert issubclass(kcp.RemoteRefused, ValidationError)

"""The package's public API is explicit and complete."""

from __future__ import annotations

import importlib

import pytest

import sediment.ingest

OWN_MODULES = ["chunker", "discover", "kinds", "model", "sources"]


def test_all_names_resolve() -> None:
    for name in sediment.ingest.__all__:
        assert getattr(sediment.ingest, name) is not None


@pytest.mark.parametrize("module", OWN_MODULES)
def test_public_names_of_modules_are_exported(module: str) -> None:
    mod = importlib.import_module(f"sediment.ingest.{module}")
    assert set(mod.__all__) <= set(sediment.ingest.__all__)

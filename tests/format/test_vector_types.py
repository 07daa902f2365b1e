"""The one rule for a new store's vector type and i8 scale (``format/profile.py``), which
the compiler, both backends' appends, the memory and context stores and search all ask."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sediment.format import Chunk, LayerFile, encode_layer
from sediment.format.profile import I8_SCALE, new_element_type, quant_scale, unit_vectors

UNIT: dict[str, Any] = {"output_norm": "l2"}


@pytest.mark.parametrize(("profile", "unit", "etype"), [
    (UNIT, True, "i8"), ({"output_norm": None}, False, "f32"), ({}, False, "f32"),
    (None, False, "f32")])
def test_unit_vectors_choose_i8(profile: dict[str, Any] | None, unit: bool, etype: str) -> None:
    assert unit_vectors(profile) is unit
    assert new_element_type(profile) == etype


def test_only_i8_of_unit_vectors_has_the_fixed_scale() -> None:
    assert quant_scale("i8", UNIT) == I8_SCALE == 1.0 / 127.0
    assert quant_scale("i8", {}) is None
    assert quant_scale("f32", UNIT) is None
    assert quant_scale("f16", UNIT) is None


def test_a_unit_vector_survives_i8_at_that_scale() -> None:
    rng = np.random.default_rng(7)
    v = rng.normal(size=(3, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    chunks = [Chunk(i + 1, "note", f"c{i}", "human", 1.0, 0, ()) for i in range(3)]
    f = LayerFile(encode_layer(chunks, v, dim=16, element_type="i8",
                               quant_scale=quant_scale("i8", UNIT)))
    got = np.stack([f.vector(i) for i in range(3)])
    assert np.abs(got - v).max() <= I8_SCALE / 2 + 1e-6

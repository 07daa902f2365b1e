"""A bounded reader fuzz: seeded mutations of valid layer files (``bench.fuzz_reader``).

Every mutated file must open, validate, read and search cleanly, or fail with a
SedimentError; anything else (a RecursionError from hostile metadata, a numpy overflow
warning while describing a bad string entry) is a crash. The full run is
``python -m bench.fuzz_reader --mutations 20000`` (docs/reliability.md).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
from bench.fuzz_reader import builtin_seeds, exercise, fuzz, render

from sediment.format import Chunk, encode_layer

MUTATIONS = 2000
SEED = 20261123


def test_mutated_layer_files_fail_only_with_sediment_errors(tmp_path: Path) -> None:
    seeds = builtin_seeds()
    report = fuzz(seeds, MUTATIONS, seed=SEED, workdir=tmp_path)
    assert report.mutations == MUTATIONS
    assert report.crashes == [], render(report, seeds)
    assert report.counts["read error"] == 0, render(report, seeds)
    for outcome in ("valid", "rejected at open", "rejected by validate"):
        assert report.counts[outcome] > 100, render(report, seeds)


def test_a_row_whose_scores_overflow_is_searched_without_warnings(tmp_path: Path) -> None:
    """Found by the 20,000-mutation run: a valid f32 row of 1.6e38 overflowed the dot
    product and the cosine division (RuntimeWarning); its scores are now skipped quietly."""
    chunks = [Chunk(i, "note", f"chunk {i} billing", "human", 1.0, 0) for i in (1, 2)]
    vectors = np.ones((2, 8), dtype=np.float32)
    vectors[1] = 1.6e38
    data = bytes(encode_layer(chunks, vectors))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert exercise(data, tmp_path / "layer") == "valid"

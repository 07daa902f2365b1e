"""A bounded reader fuzz: seeded mutations of valid layer files (``bench.fuzz_reader``).

Every mutated file must open, validate, read and search cleanly, or fail with a
SedimentError; anything else (a RecursionError from hostile metadata, a numpy overflow
warning while describing a bad string entry) is a crash. The full run is
``python -m bench.fuzz_reader --mutations 20000`` (docs/reliability.md).
"""

from __future__ import annotations

from pathlib import Path

from bench.fuzz_reader import builtin_seeds, fuzz, render

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

"""Append latency through ``LayerSet.append``: one chunk, and a batch of 100, to a local
layer that already holds 1k or 10k chunks."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench import layerfiles, synthetic
from bench.timing import Stats, repeat_with_setup
from sediment.store import LayerName, LayerSet, NewChunk

EXISTING = (1_000, 10_000)
BATCHES = (1, 100)


@dataclass(frozen=True, slots=True)
class AppendLatency:
    existing: int
    batch: int
    element_type: str
    stats: Stats

    @property
    def chunks_per_s(self) -> float:
        return self.batch / self.stats.p50


def _time_appends(template: Path, path: Path, items: list[NewChunk],
                  vecs: npt.NDArray[np.float32], prof: dict[str, object], repeats: int
                  ) -> Stats:
    ls = LayerSet({LayerName.LOCAL: path})

    def reset() -> None:
        shutil.copyfile(template, path)
        ls.layers()

    def append(_: int) -> object:
        return ls.append(LayerName.LOCAL, items, vecs, profile=prof, allowed=(LayerName.LOCAL,))

    return repeat_with_setup(append, reset, repeats)


def measure(workdir: Path, dim: int, seed: int, repeats: int,
            element_type: str = "f32") -> list[AppendLatency]:
    """Every timed append starts from a fresh copy of a template layer (copied and re-opened
    untimed), so each sample appends to exactly ``existing`` chunks."""
    out = []
    prof = synthetic.profile(dim)
    new_texts = synthetic.texts(max(BATCHES), seed + 1)
    new_vecs = synthetic.unit_vectors(max(BATCHES), dim, seed + 2)
    for existing in EXISTING:
        template = workdir / f"append-{element_type}-{existing}.template.db"
        layerfiles.build(template, synthetic.chunks(synthetic.texts(existing, seed)),
                         synthetic.unit_vectors(existing, dim, seed), element_type)
        path = workdir / f"append-{element_type}-{existing}" / LayerName.LOCAL.file_name
        path.parent.mkdir(parents=True, exist_ok=True)
        for batch in BATCHES:
            items = [NewChunk("note", t, "mcp", 0.9) for t in new_texts[:batch]]
            stats = _time_appends(template, path, items, new_vecs[:batch], prof, repeats)
            out.append(AppendLatency(existing, batch, element_type, stats))
    return out

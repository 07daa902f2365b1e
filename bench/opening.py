"""Open latency of a layer file that is already in the page cache (written just before)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.timing import Stats, repeat
from sediment.format import LayerFile
from sediment.store import LayerSet


@dataclass(frozen=True, slots=True)
class OpenTimes:
    layerfile: Stats
    """``LayerFile.open`` plus the shape of ``.embeddings`` (maps the file, checks headers)."""
    layerset: Stats
    """``LayerSet({"base": path}).layers()`` plus ``.schema()``: what a search starts with."""


def measure(path: Path, repeats: int) -> OpenTimes:
    def open_file(_: int) -> object:
        return LayerFile.open(path).embeddings.shape

    def open_set(_: int) -> object:
        ls = LayerSet({"base": path})
        ls.layers()
        return ls.schema()

    return OpenTimes(repeat(open_file, repeats, warmup=2), repeat(open_set, repeats, warmup=2))

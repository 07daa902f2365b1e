"""Sediment's MiniLM embedder beside a bare onnxruntime loop, and compile's peak memory.

Each run is a fresh process (``bench.embed_probe``), so its peak RSS is its own; the two
embedders alternate round by round, so a slow spell of the shared machine hits both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, slots=True)
class EmbedRuns:
    texts: int
    runs: dict[str, list[dict[str, Any]]]
    """Per variant (``sediment``, ``bare``), one probe result per round."""
    max_diff: float
    """Largest absolute difference between the two variants' vectors."""

    def median(self, variant: str, key: str) -> float:
        return float(np.median([r[key] for r in self.runs[variant]]))


@dataclass(frozen=True, slots=True)
class CompileMemory:
    files: int
    chunks: int
    layer_bytes: int
    peak_rss: int
    loaded_rss: int
    cpu_s: float


def _probe(args: list[str], timeout: float = 1800.0) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "bench.embed_probe", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"bench.embed_probe {' '.join(args)} failed: "
                           f"{done.stderr.strip().splitlines()[-1:]}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def measure(workdir: Path, texts: int, rounds: int) -> EmbedRuns:
    runs: dict[str, list[dict[str, Any]]] = {"sediment": [], "bare": []}
    d = workdir / "embed-probe"
    d.mkdir(parents=True, exist_ok=True)
    for r in range(rounds):
        order = ("sediment", "bare") if r % 2 == 0 else ("bare", "sediment")
        for variant in order:
            runs[variant].append(_probe([variant, str(texts), str(d)]))
    diff = float(np.max(np.abs(np.load(d / "sediment.npy") - np.load(d / "bare.npy"))))
    return EmbedRuns(texts, runs, diff)


def compile_peak(workdir: Path, files: int) -> CompileMemory:
    got = _probe(["compile", str(files), str(workdir)])
    return CompileMemory(got["files"], got["chunks"], got["layer_bytes"], got["peak_rss"],
                         got["loaded_rss"], got["cpu_s"])

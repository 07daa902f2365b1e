"""Resident memory of a fresh process that opens (then searches) one layer file."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Snapshot:
    rss: int
    peak: int
    anon: int
    file: int


@dataclass(frozen=True, slots=True)
class MemoryProbe:
    file_bytes: int
    imports: Snapshot
    opened: Snapshot
    searched: Snapshot
    open_s: float
    """First ``LayerFile.open`` in the fresh process (file in page cache)."""
    first_search_s: float


def _snap(d: dict[str, int]) -> Snapshot:
    return Snapshot(d.get("VmRSS", 0), d.get("maxrss", 0), d.get("RssAnon", 0),
                    d.get("RssFile", 0))


def probe(path: Path) -> MemoryProbe:
    done = subprocess.run([sys.executable, "-m", "bench.rss_probe", str(path)], cwd=_REPO,
                          capture_output=True, text=True, check=True, timeout=600)
    d = json.loads(done.stdout.strip().splitlines()[-1])
    return MemoryProbe(int(d["file_bytes"]), _snap(d["imports"]), _snap(d["opened"]),
                       _snap(d["searched"]), float(d["open_s"]), float(d["first_search_s"]))

"""Command-line options of ``python -m bench``."""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

FULL_SIZES = (10_000, 100_000, 1_000_000)
SECTIONS = ("search", "layers", "append", "compile", "embed-memory", "first-query")
"""What ``--only`` can select: search (bandwidth, files, exact and hybrid search, resident
memory, at each size), layers, append, compile (and raw embedding throughput), and
embed-memory (Sediment's embedder beside a bare onnxruntime loop, compile's peak RSS), and
first-query (a fresh process's first hybrid query with the persisted lexicon)."""
QUICK_SIZES = (10_000, 100_000)


@dataclass(frozen=True, slots=True)
class Options:
    quick: bool
    sizes: tuple[int, ...]
    out: Path
    workdir: Path | None
    keep: bool
    dim: int
    seed: int
    command: str
    only: tuple[str, ...] = ()
    """Sections to run (empty: all); the report then replaces only those sections."""

    def runs(self, section: str) -> bool:
        return not self.only or section in self.only

    def queries_for(self, rows: int) -> int:
        """Timed vector queries per configuration: fewer for 1M rows and in quick mode."""
        if self.quick:
            return 50
        return 100 if rows >= 1_000_000 else 200

    @property
    def warmup(self) -> int:
        return 3 if self.quick else 5

    @property
    def open_repeats(self) -> int:
        return 20

    @property
    def layer_split_total(self) -> int:
        return 100_000

    @property
    def hash_corpus_files(self) -> int:
        return 50 if self.quick else 200

    @property
    def minilm_corpus_files(self) -> int:
        return 5 if self.quick else 30

    @property
    def embed_texts(self) -> int:
        return 128 if self.quick else 512

    @property
    def append_repeats(self) -> int:
        return 10 if self.quick else 20

    @property
    def embed_memory_texts(self) -> int:
        return 64 if self.quick else 256

    @property
    def embed_memory_rounds(self) -> int:
        return 2 if self.quick else 3


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s.replace("_", "")) for s in text.split(",") if s.strip())
    except ValueError:
        msg = f"--sizes wants integers like 10000,100000: {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if not sizes or any(s <= 0 for s in sizes):
        raise argparse.ArgumentTypeError("--sizes wants positive integers")
    return tuple(sorted(set(sizes)))


def _only(text: str) -> tuple[str, ...]:
    got = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in got if s not in SECTIONS]
    if bad or not got:
        raise argparse.ArgumentTypeError(f"--only wants some of {', '.join(SECTIONS)}")
    return got


def parse(argv: list[str] | None = None) -> Options:
    args_list = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark Sediment and write a Markdown report (not a test suite).")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: sizes 10k and 100k, fewer queries (under 2 minutes)")
    p.add_argument("--sizes", type=_sizes, default=None,
                   help="comma-separated chunk counts (default 10000,100000,1000000)")
    p.add_argument("--out", type=Path, default=Path("docs/benchmarks.md"),
                   help="report path (default docs/benchmarks.md)")
    p.add_argument("--workdir", type=Path, default=None,
                   help="where generated layer files go (default: a new temp dir under /tmp, "
                        "removed afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the generated files")
    p.add_argument("--dim", type=int, default=384, help="embedding dimensions (default 384)")
    p.add_argument("--seed", type=int, default=20240601, help="random seed")
    p.add_argument("--only", type=_only, default=(),
                   help=f"comma-separated sections to run ({', '.join(SECTIONS)}); the "
                        "report keeps every other section as it was")
    a = p.parse_args(args_list)
    sizes = a.sizes or (QUICK_SIZES if a.quick else FULL_SIZES)
    command = " ".join(["python -m bench", *(shlex.quote(x) for x in args_list)])
    return Options(quick=a.quick, sizes=sizes, out=a.out, workdir=a.workdir, keep=a.keep,
                   dim=a.dim, seed=a.seed, command=command, only=a.only)

"""``python -m bench.fuzz_reader --mutations 20000``: mutate valid layer files, read each one.

Every mutated file must either open, validate and be read and searched cleanly, or fail with
a ``SedimentError`` (``FormatError`` for the file itself); any other exception is a crash,
printed with the iteration that reproduces it (``--only N``). Mutations are seeded per
iteration, so a run is reproducible and each crash can be replayed alone.

The seed files are built here (f32 and i8 layers with relationships, events, metadata, and
an empty layer) plus, when ``../shared`` is present, the reference implementation's layer
files. Mutations: random bytes and bits, interesting values written into the format's
fields (header, section table, section headers, chunk records, string entries,
relationships), truncation, extension, spliced blocks, hostile metadata JSON and invalid
UTF-8 in the string blob.

Each file is exercised the way ``validate``, ``inspect`` and ``search`` use it: open,
``validate()``, decode every chunk, the embeddings, the metadata and profile, then a hybrid
search with a query vector through ``ops.run_search`` (the path ``sediment search`` takes).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import struct
import sys
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sediment.errors import FormatError, SedimentError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.format import layout as L
from sediment.ops.query import run_search
from sediment.search import SearchRequest
from sediment.store import LayerSet

MAX_QUERY_DIM = 65_536
"""Wider layers (a mutated ``dim`` of 2**31 is valid in an empty layer) are searched
lexically: a query vector that wide is the harness's cost, not the reader's."""

OUTCOMES = ("valid", "rejected at open", "rejected by validate", "read error", "search error",
            "crash")

Field = tuple[int, int]  # (offset, width in bytes: 2, 4 or 8; 4 may also be an f32)


@dataclass(slots=True)
class Seed:
    name: str
    data: bytes
    fields: list[Field]
    metadata: tuple[int, int] | None  # blob offset and length
    strings: tuple[int, int]  # string bytes offset and length


@dataclass(slots=True)
class Crash:
    iteration: int
    seed: str
    mutation: str
    error: str
    where: str


@dataclass(slots=True)
class Report:
    mutations: int
    seconds: float
    counts: Counter[str] = field(default_factory=Counter)
    by_mutation: dict[str, Counter[str]] = field(default_factory=dict)
    crashes: list[Crash] = field(default_factory=list)
    slowest: tuple[float, int] = (0.0, -1)


# -- seed files ----------------------------------------------------------------------------
def _profile(dim: int) -> dict[str, object]:
    return {"backend": "hash", "model": None, "revision": None, "dim": dim, "output_norm": "l2"}


def _layer(n: int, *, dim: int = 8, etype: str = "f32", seed: int = 0, padding: int = 0
           ) -> bytes:
    kinds = ("canonical", "note", "invariant")
    chunks = [Chunk(i, kinds[i % 3], f"chunk {i} about layers, billing and déjà vu", "human"
                    if i % 2 else "mcp", 1.0 if i % 2 else 0.5, 1_700_000_000_000 + i,
                    (f"docs/a.md:{i}", i - 1) if i > 1 else (f"docs/a.md:{i}",))
              for i in range(1, n + 1)]
    chunks.append(Chunk(n + 1, "meta.proposal_event",
                        '{"context_id":2,"event":"propose","target":"user"}', "mcp", 1.0,
                        1_700_000_000_100, (2,)))
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((len(chunks), dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    md = {"v": 1, "embedding_profile": _profile(dim),
          "cache_key_alg": "sha256(profile_json_v1 || 0x00 || content_utf8)",
          "id_high_water": n + 1, "tool_name": "sediment"}
    if padding:
        md["embedder_metadata"] = {"note": "x" * padding}
    return bytes(encode_layer(chunks, vecs, dim=dim, element_type=etype, metadata=md))


def builtin_seeds() -> list[Seed]:
    """Small valid files covering every section, both element types and an empty layer;
    one has room in its metadata for the hostile JSON (50,000 brackets) to fit whole."""
    raw = {"f32": _layer(6), "i8": _layer(5, etype="i8", seed=1),
           "f32, 64 KB metadata": _layer(4, seed=2, padding=64_000),
           "empty": bytes(encode_layer([], np.zeros((0, 8), np.float32),
                                       metadata={"v": 1, "embedding_profile": _profile(8)}))}
    return [seed_of(name, data) for name, data in raw.items()]


def reference_seeds() -> list[Seed]:
    """The reference implementation's layer files, when ``../shared`` is beside the repo."""
    root = Path(os.environ.get("SEDIMENT_SHARED",
                               Path(__file__).resolve().parents[1].parent / "shared"))
    directory = root / "interop" / "agentsdb-reference"
    return [seed_of(f"reference {p.name}", p.read_bytes())
            for p in sorted(directory.glob("AGENTS*.db"))]


def seed_of(name: str, data: bytes) -> Seed:
    """A seed with the offsets of every field the mutations aim at (``data`` must be valid)."""
    f = LayerFile.from_bytes(data)
    fields: list[Field] = [(0, 4), (4, 2), (6, 2), (8, 8), (16, 8), (24, 8), (32, 8)]
    metadata = None
    strings = (0, 0)
    for sec in f.sections:
        fields += [(sec.entry_offset, 4), (sec.entry_offset + 4, 4),
                   (sec.entry_offset + 8, 8), (sec.entry_offset + 16, 8)]
        at = sec.offset
        if sec.kind == L.SECTION_STRING_DICTIONARY:
            fields += [(at + k, 8) for k in (0, 8, 16, 24)]
            count, entries, blob, blen = L.STRING_DICT_HEADER.unpack_from(data, at)
            fields += [(entries + 16 * i + k, 8) for i in range(min(count, 64)) for k in (0, 8)]
            strings = (blob, blen)
        elif sec.kind == L.SECTION_CHUNK_TABLE:
            fields += [(at, 8), (at + 8, 8)]
            count, records = L.CHUNK_TABLE_HEADER.unpack_from(data, at)
            widths = (4, 4, 4, 4, 4, 8, 4, 4, 8, 4, 4)
            names = L.CHUNK_RECORD_DTYPE.names or ()
            offsets = [L.CHUNK_RECORD_DTYPE.fields[n][1] for n in names]  # type: ignore[index]
            fields += [(records + 52 * i + off, w) for i in range(min(count, 64))
                       for off, w in zip(offsets, widths, strict=True)]
        elif sec.kind == L.SECTION_EMBEDDING_MATRIX:
            fields += [(at + k, w) for k, w in ((0, 8), (8, 4), (12, 4), (16, 8), (24, 8),
                                               (32, 4), (36, 4))]
        elif sec.kind == L.SECTION_RELATIONSHIPS:
            fields += [(at, 8), (at + 8, 8)]
            count, records = L.RELATIONSHIPS_HEADER.unpack_from(data, at)
            fields += [(records + 8 * i + k, 4) for i in range(min(count, 64)) for k in (0, 4)]
        elif sec.kind == L.SECTION_LAYER_METADATA:
            fields += [(at + k, w) for k, w in ((0, 4), (4, 4), (8, 8), (16, 8))]
            metadata = (at + 24, sec.length - 24)
    return Seed(name, data, fields, metadata, strings)


# -- mutations -----------------------------------------------------------------------------
def _interesting(width: int, size: int, rng: random.Random) -> bytes:
    if width == 2:
        return struct.pack("<H", rng.choice([0, 1, 2, 0xFFFF, rng.randrange(1 << 16)]))
    if width == 4 and rng.random() < 0.25:
        return struct.pack("<f", rng.choice([0.0, -0.0, 1.0, -1.0, 2.0, 1e-45, float("nan"),
                                             float("inf"), float("-inf")]))
    if width == 4:
        return struct.pack("<I", rng.choice([0, 1, 2, 3, 5, 0x7FFFFFFF, 0x80000000,
                                             0xFFFFFFFF, size, size - 1, rng.randrange(size),
                                             rng.randrange(1 << 32)]))
    return struct.pack("<Q", rng.choice([0, 1, 2**31, 2**32, 2**32 - 1, 2**63, 2**64 - 1,
                                         size, size - 1, size + 1, rng.randrange(size),
                                         rng.randrange(1 << 64)]))


HOSTILE_JSON = [b"[" * 50_000, b'{"a":' * 20_000, b'{"n":' + b"9" * 5_000 + b"}",
                b'{"n":1e999}', b'{"n":NaN}', b"[1,2,3]", b'"text"', b"null", b"{",
                b'{"embedding_profile":[]}', b'{"embedding_profile":{"dim":"x"}}',
                b'{"id_high_water":' + b"9" * 40 + b"}", b'{"id_high_water":-5}',
                b'{"\xff":1}', b'{"a":"\\ud800"}']


def _bytes(data: bytearray, rng: random.Random, seed: Seed) -> str:
    for _ in range(rng.randint(1, 8)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return "bytes"


def _bits(data: bytearray, rng: random.Random, seed: Seed) -> str:
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return "bits"


def _field(data: bytearray, rng: random.Random, seed: Seed) -> str:
    for _ in range(rng.randint(1, 3)):
        at, width = rng.choice(seed.fields)
        data[at:at + width] = _interesting(width, len(data), rng)
    return "field"


def _truncate(data: bytearray, rng: random.Random, seed: Seed) -> str:
    del data[rng.randrange(len(data)):]
    if rng.random() < 0.5 and len(data) >= 16:
        struct.pack_into("<Q", data, 8, len(data))
    return "truncate"


def _extend(data: bytearray, rng: random.Random, seed: Seed) -> str:
    data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    if rng.random() < 0.7:
        struct.pack_into("<Q", data, 8, len(data))
    return "extend"


def _splice(data: bytearray, rng: random.Random, seed: Seed) -> str:
    n = rng.randint(1, 128)
    src, dst = rng.randrange(len(data)), rng.randrange(len(data))
    block = data[src:src + n]
    data[dst:dst + len(block)] = block
    del data[len(seed.data):]
    return "splice"


def _metadata(data: bytearray, rng: random.Random, seed: Seed) -> str:
    if seed.metadata is None:
        return _field(data, rng, seed)
    at, length = seed.metadata
    blob = rng.choice(HOSTILE_JSON)
    if len(blob) > length:
        blob = blob[:length]
    data[at:at + length] = blob.ljust(length)
    return "metadata"


def _strings(data: bytearray, rng: random.Random, seed: Seed) -> str:
    at, length = seed.strings
    if length == 0:
        return _bytes(data, rng, seed)
    junk = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\x1b[31m", b"\xf4\x90"])
    pos = at + rng.randrange(length)
    data[pos:pos + len(junk)] = junk
    del data[len(seed.data):]
    return "strings"


MUTATORS: list[Callable[[bytearray, random.Random, Seed], str]] = [
    _bytes, _bits, _field, _field, _field, _truncate, _extend, _splice, _metadata, _strings]


def mutate(seed: Seed, rng: random.Random) -> tuple[bytes, str]:
    data = bytearray(seed.data)
    kinds = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if len(data) < L.FILE_HEADER.size:
            break
        kinds.append(rng.choice(MUTATORS)(data, rng, seed))
    return bytes(data), "+".join(kinds)


# -- exercising one file -------------------------------------------------------------------
def exercise(data: bytes, workdir: Path) -> str:
    """The outcome of reading ``data`` as ``validate``, ``inspect`` and ``search`` do.

    SedimentErrors are outcomes; any other exception propagates (a crash).
    """
    try:
        f = LayerFile.from_bytes(data)
    except FormatError:
        return "rejected at open"
    outcome = "rejected by validate" if f.validate() else "valid"
    try:
        for c in f.chunks():
            assert isinstance(c.content, str) and isinstance(c.sources, tuple)
        _ = float(np.asarray(f.embeddings, dtype=np.float64).sum())
        _ = f.metadata, f.embedding_profile
        if f.chunk_count:
            f.chunks_at(list(range(f.chunk_count))[:50])
    except SedimentError:
        return outcome if outcome != "valid" else "read error"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    (workdir / "AGENTS.db").write_bytes(data)
    try:
        request = SearchRequest(text="billing layers chunk", k=5, include_meta=True,
                                mode="hybrid" if 0 < f.dim <= MAX_QUERY_DIM else "lexical")
        query = np.ones(f.dim, dtype=np.float32) if request.mode == "hybrid" else None
        run_search(LayerSet.from_directory(workdir), request, query_vec=query)
    except SedimentError:
        return outcome if outcome != "valid" else "search error"
    return outcome


def fuzz(seeds: Sequence[Seed], mutations: int, *, seed: int, workdir: Path,
         only: int | None = None, save: Path | None = None,
         progress: Callable[[int, Report], None] | None = None) -> Report:
    """Run ``mutations`` seeded mutations over ``seeds`` and count the outcomes.

    Warnings are errors here (as in the test suite): a numpy overflow warning while reading
    a hostile file is a crash too.
    """
    report = Report(mutations=0, seconds=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _run(report, seeds, mutations, seed=seed, workdir=workdir, only=only, save=save,
             progress=progress)
    return report


def _run(report: Report, seeds: Sequence[Seed], mutations: int, *, seed: int, workdir: Path,
         only: int | None, save: Path | None,
         progress: Callable[[int, Report], None] | None) -> None:
    start = time.perf_counter()
    todo = range(mutations) if only is None else [only]
    for i in todo:
        rng = random.Random(f"{seed}:{i}")
        base = rng.choice(seeds)
        data, kind = mutate(base, rng)
        t0 = time.perf_counter()
        try:
            outcome = exercise(data, workdir / "layer")
        except Exception as exc:  # anything but a SedimentError is the finding
            outcome = "crash"
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            report.crashes.append(Crash(i, base.name, kind, f"{type(exc).__name__}: "
                                        f"{str(exc)[:200]}", f"{frame.filename}:{frame.lineno}"))
            if save is not None:
                save.mkdir(parents=True, exist_ok=True)
                (save / f"crash-{seed}-{i}.db").write_bytes(data)
        spent = time.perf_counter() - t0
        if spent > report.slowest[0]:
            report.slowest = (spent, i)
        report.counts[outcome] += 1
        for k in kind.split("+"):
            report.by_mutation.setdefault(k, Counter())[outcome] += 1
        report.mutations += 1
        if progress is not None:
            progress(i, report)
    report.seconds = time.perf_counter() - start


def render(report: Report, seeds: Sequence[Seed]) -> str:
    lines = [f"{report.mutations:,} mutated files from {len(seeds)} seed files "
             f"({', '.join(s.name for s in seeds)}) in {report.seconds:.1f} s; slowest file "
             f"{report.slowest[0] * 1000:.0f} ms (iteration {report.slowest[1]})", "",
             "| outcome | files |", "|---|---:|"]
    lines += [f"| {o} | {report.counts.get(o, 0):,} |" for o in OUTCOMES]
    kinds = sorted(report.by_mutation)
    lines += ["", "| mutation | " + " | ".join(OUTCOMES) + " |",
              "|---|" + "---:|" * len(OUTCOMES)]
    lines += [f"| {k} | " + " | ".join(f"{report.by_mutation[k].get(o, 0):,}"
                                        for o in OUTCOMES) + " |" for k in kinds]
    groups: dict[tuple[str, str], list[Crash]] = {}
    for c in report.crashes:
        groups.setdefault((c.error.split(":")[0], c.where), []).append(c)
    if groups:
        lines += ["", "Crashes by exception and place (replay one with --only N):"]
    for (error, where), found in sorted(groups.items(), key=lambda g: -len(g[1])):
        first = found[0]
        lines.append(f"- {len(found):,} x {error} at {where}; first: iteration "
                     f"{first.iteration} ({first.seed}, {first.mutation}): {first.error}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fuzz_reader", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mutations", type=int, default=20_000, help="files to mutate and read")
    p.add_argument("--seed", type=int, default=0, help="seed of the run (default 0)")
    p.add_argument("--only", type=int, default=None, help="replay one iteration")
    p.add_argument("--save", type=Path, default=None, help="write crashing files here")
    p.add_argument("--no-reference", action="store_true",
                   help="leave out ../shared's reference layer files")
    p.add_argument("--workdir", type=Path, default=Path("build/fuzz_reader"))
    args = p.parse_args(argv)
    if args.mutations < 1:
        p.error("--mutations must be positive")
    seeds = builtin_seeds() + ([] if args.no_reference else reference_seeds())

    def progress(i: int, report: Report) -> None:
        if (i + 1) % 2000 == 0:
            print(f"[fuzz_reader] {i + 1:,} files, {report.counts.get('crash', 0)} crashes",
                  file=sys.stderr, flush=True)

    report = fuzz(seeds, args.mutations, seed=args.seed, workdir=args.workdir, only=args.only,
                  save=args.save, progress=progress)
    shutil.rmtree(args.workdir / "layer", ignore_errors=True)
    print(render(report, seeds))
    return 1 if report.crashes else 0


if __name__ == "__main__":
    sys.exit(main())

"""Append latency through ``LayerSet.append`` at 1k, 10k and 100k chunks, f32 and i8.

Every timed append starts from a fresh copy of a template layer (copied, flushed to disk
and re-opened untimed), so each sample appends to exactly ``existing`` chunks. One-chunk appends are
timed interleaved with the same append through the previous write (the whole new file
assembled in memory by ``encode_append``, then written), so a slow spell of the shared
machine hits both alike; *save* adds embedding the new text with MiniLM first, as an agent
memory or context store does on every write. :func:`phases` splits one-chunk appends at
10,000 chunks into their parts (writing the new file, its fsync, the directory's fsync, the
rest), timing the product's own functions where the append calls them.
"""

from __future__ import annotations

import gc
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench import layerfiles, synthetic
from bench.timing import Stats
from sediment.embed import Embedder
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.format.writer import encode_append
from sediment.store import LayerName, LayerSet, NewChunk

EXISTING = (1_000, 10_000, 100_000)
BATCHES = (1, 100)
PHASE_SIZES = (10_000,)
PHASES = ("write", "fsync file", "fsync directory", "rest")
"""Parts of an append (variant names of :func:`phases`' rows)."""
STORE_SIZES = (1_000, 5_000, 10_000)
"""Items (each with its store event) in the agent-store rows."""
SAVE_SIZES = (5_000, 10_000)
"""The progressive-context target is set at 5,000 items, agent memory's at 10,000."""
ELEMENT_TYPES = ("f32", "i8")


@dataclass(frozen=True, slots=True)
class AppendLatency:
    existing: int
    batch: int
    element_type: str
    stats: Stats
    variant: str = "append"
    """``append`` (LayerSet.append), ``in memory`` (the previous write: the whole file
    assembled in memory, then written), ``save`` (MiniLM embedding, then append),
    ``embed`` (the embedding part of each save), ``store`` (an agent store's write: an item
    and its event, into a layer of ``existing`` items and as many events, the events sharing
    one zero row), ``store, row per event`` (the same with a zero row per event, as before),
    or one of :data:`PHASES`."""

    @property
    def chunks_per_s(self) -> float:
        return self.batch / self.stats.p50


def _timed(fns: list[Callable[[], object]], resets: list[Callable[[], object]],
           repeats: int) -> list[Stats]:
    """``fns`` in turn, each after its untimed reset, ``repeats`` times (plus one warm-up)."""
    out: list[list[float]] = [[] for _ in fns]
    for i in range(repeats + 1):
        for fn, reset, samples in zip(fns, resets, out, strict=True):
            reset()
            gc.collect()
            t = time.perf_counter()
            fn()
            if i:
                samples.append(time.perf_counter() - t)
    return [Stats(tuple(s)) for s in out]


@contextmanager
def _previous_write() -> Iterator[None]:
    """``LayerSet.append`` with the write it had before: the whole new file assembled in
    memory by ``encode_append``, then written in one call (everything else unchanged)."""
    from sediment.store import layerset

    def assembled(fd: int, base: LayerFile, chunks: Sequence[Chunk],
                  embeddings: npt.NDArray[np.float32], *,
                  metadata: dict[str, Any] | None, vectorless: Sequence[bool] | None = None
                  ) -> int:
        data = memoryview(encode_append(base, chunks, embeddings, metadata=metadata,
                                        vectorless=vectorless))
        while len(data):
            data = data[os.write(fd, data):]
        return 0

    real = layerset.write_append
    layerset.write_append = assembled
    try:
        yield
    finally:
        layerset.write_append = real


def _fresh_copy(template: Path, path: Path) -> None:
    """Copy the template over the layer and flush it, so the timed append does not pay for
    writing back the copy (an agent's appends follow appends already on disk)."""
    shutil.copyfile(template, path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _layer(workdir: Path, existing: int, element_type: str, dim: int, seed: int
           ) -> tuple[Path, Path, LayerSet]:
    template = workdir / f"append-{element_type}-{existing}.template.db"
    layerfiles.build(template, synthetic.chunks(synthetic.texts(existing, seed)),
                     synthetic.unit_vectors(existing, dim, seed), element_type)
    path = workdir / f"append-{element_type}-{existing}" / LayerName.LOCAL.file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, path)
    return template, path, LayerSet({LayerName.LOCAL: path})


def measure(workdir: Path, dim: int, seed: int, repeats: int,
            embedder: Embedder | None = None) -> list[AppendLatency]:
    """Every size and element type; ``embedder`` (MiniLM, loaded) adds the save rows."""
    out: list[AppendLatency] = []
    prof = synthetic.profile(dim)
    new_texts = synthetic.texts(max(BATCHES), seed + 1)
    new_vecs = synthetic.unit_vectors(max(BATCHES), dim, seed + 2)
    for element_type in ELEMENT_TYPES:
        for existing in EXISTING:
            template, path, ls = _layer(workdir, existing, element_type, dim, seed)

            def reset(template: Path = template, path: Path = path,
                      ls: LayerSet = ls) -> None:
                _fresh_copy(template, path)
                ls.layers()

            for batch in BATCHES:
                items = [NewChunk("note", t, "mcp", 0.9) for t in new_texts[:batch]]
                vecs = new_vecs[:batch]

                def append(ls: LayerSet = ls, items: list[NewChunk] = items,
                           vecs: npt.NDArray[np.float32] = vecs) -> object:
                    return ls.append(LayerName.LOCAL, items, vecs, profile=prof,
                                     allowed=(LayerName.LOCAL,))

                if batch > 1:
                    (stats,) = _timed([append], [reset], repeats)
                    out.append(AppendLatency(existing, batch, element_type, stats))
                    continue

                def in_memory(append: Callable[[], object] = append) -> object:
                    with _previous_write():
                        return append()

                now, before = _timed([append, in_memory], [reset, reset], repeats)
                out.append(AppendLatency(existing, batch, element_type, now))
                out.append(AppendLatency(existing, batch, element_type, before, "in memory"))
            shutil.rmtree(path.parent, ignore_errors=True)
            template.unlink()
    out += stores(workdir, dim, seed, repeats)
    out += phases(workdir, dim, seed, repeats)
    if embedder is not None:
        out += _saves(workdir, embedder, seed, repeats)
    return out


@contextmanager
def _phase_clock(times: dict[str, list[float]]) -> Iterator[None]:
    """Record the time of each part of an append as the store calls it: the new file's
    write, its fsync (``os.fsync`` outside ``fsync_dir``) and the directory's fsync."""
    from sediment.store import atomic, layerset

    real_write, real_dir, real_fsync = layerset.write_append, atomic.fsync_dir, os.fsync
    in_dir = [False]

    def write(*args: Any, **kw: Any) -> int:
        t = time.perf_counter()
        try:
            return real_write(*args, **kw)
        finally:
            times["write"].append(time.perf_counter() - t)

    def fsync(fd: int) -> None:
        t = time.perf_counter()
        try:
            real_fsync(fd)
        finally:
            if not in_dir[0]:
                times["fsync file"].append(time.perf_counter() - t)

    def fsync_dir(directory: Path) -> None:
        in_dir[0] = True
        t = time.perf_counter()
        try:
            real_dir(directory)
        finally:
            in_dir[0] = False
            times["fsync directory"].append(time.perf_counter() - t)

    layerset.write_append, atomic.fsync_dir, os.fsync = write, fsync_dir, fsync
    try:
        yield
    finally:
        layerset.write_append, atomic.fsync_dir, os.fsync = real_write, real_dir, real_fsync


def phases(workdir: Path, dim: int, seed: int, repeats: int) -> list[AppendLatency]:
    """One-chunk appends at :data:`PHASE_SIZES`, split into :data:`PHASES`."""
    out: list[AppendLatency] = []
    prof = synthetic.profile(dim)
    item = [NewChunk("note", synthetic.texts(1, seed + 1)[0], "mcp", 0.9)]
    vec = synthetic.unit_vectors(1, dim, seed + 2)
    for element_type in ELEMENT_TYPES:
        for existing in PHASE_SIZES:
            template, path, ls = _layer(workdir, existing, element_type, dim, seed)
            times: dict[str, list[float]] = {name: [] for name in PHASES}
            totals: list[float] = []
            for i in range(repeats + 1):
                _fresh_copy(template, path)
                ls.layers()
                gc.collect()
                with _phase_clock(times):
                    t = time.perf_counter()
                    ls.append(LayerName.LOCAL, item, vec, profile=prof,
                              allowed=(LayerName.LOCAL,))
                    totals.append(time.perf_counter() - t)
                if i == 0:  # warm-up
                    totals.clear()
                    for v in times.values():
                        v.clear()
            times["rest"] = [total - sum(times[p][n] for p in PHASES[:3])
                             for n, total in enumerate(totals)]
            out += [AppendLatency(existing, 1, element_type, Stats(tuple(times[p])), p)
                    for p in PHASES]
            shutil.rmtree(path.parent, ignore_errors=True)
            template.unlink()
    return out


def _saves(workdir: Path, embedder: Embedder, seed: int, repeats: int) -> list[AppendLatency]:
    """Embed one new text with the real model, then append it: an agent's save."""
    out = []
    dim = embedder.profile.dim
    texts = synthetic.texts(repeats + 2, seed + 9)
    for element_type in ELEMENT_TYPES:
        for existing in SAVE_SIZES:
            template, path, ls = _layer(workdir, existing, element_type, dim, seed)
            turn = iter(range(10**9))
            embeds: list[float] = []

            def save(ls: LayerSet = ls, turn: Iterator[int] = turn, existing: int = existing,
                     embeds: list[float] = embeds) -> object:
                text = f"{texts[next(turn) % len(texts)]} ({existing})"
                t = time.perf_counter()
                vec = embedder.embed([text])
                embeds.append(time.perf_counter() - t)
                # profile=None: the template's vectors are synthetic (its profile is not
                # MiniLM's); comparing two profile dicts costs microseconds either way.
                return ls.append(LayerName.LOCAL, [NewChunk("note", text, "mcp", 0.9)], vec,
                                 profile=None, allowed=(LayerName.LOCAL,))

            def reset(template: Path = template, path: Path = path,
                      ls: LayerSet = ls) -> None:
                _fresh_copy(template, path)
                ls.layers()

            (stats,) = _timed([save], [reset], repeats)
            out.append(AppendLatency(existing, 1, element_type, stats, "save"))
            out.append(AppendLatency(existing, 1, element_type, Stats(tuple(embeds[1:])),
                                     "embed"))
            shutil.rmtree(path.parent, ignore_errors=True)
            template.unlink()
    return out


@contextmanager
def _row_per_event() -> Iterator[None]:
    """``LayerSet.append`` giving every event its own zero row, as it did before."""
    from sediment.store import layerset

    real = layerset._vectorless
    layerset._vectorless = lambda chunks, vectors: None
    try:
        yield
    finally:
        layerset._vectorless = real


def _store_template(path: Path, existing: int, element_type: str, dim: int, seed: int,
                    shared: bool) -> None:
    """``existing`` items, each followed by its event (``meta.*``, a zero vector)."""
    items = synthetic.chunks(synthetic.texts(existing, seed))
    vecs = synthetic.unit_vectors(existing, dim, seed)
    chunks: list[Chunk] = []
    for c in items:
        chunks += [c, Chunk(c.id + existing, "meta.context._item", f'{{"item": {c.id}}}', "mcp",
                            1.0, c.created_at_ms, (c.id,))]
    matrix = np.zeros((2 * existing, dim), dtype=np.float32)
    matrix[0::2] = vecs
    flags = [i % 2 == 1 for i in range(2 * existing)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode_layer(chunks, matrix, dim=dim, element_type=element_type,
                                  quant_scale=1 / 127 if element_type == "i8" else None,
                                  metadata=synthetic.layer_metadata(dim, 2 * existing),
                                  vectorless=flags if shared else None))


def stores(workdir: Path, dim: int, seed: int, repeats: int) -> list[AppendLatency]:
    """An agent store's write (one item and its event) at :data:`STORE_SIZES`, events
    sharing one zero row against a row per event, timed alternately."""
    out: list[AppendLatency] = []
    prof = synthetic.profile(dim)
    text = synthetic.texts(1, seed + 1)[0]
    vecs = np.zeros((2, dim), dtype=np.float32)
    vecs[0] = synthetic.unit_vectors(1, dim, seed + 2)[0]
    for element_type in ELEMENT_TYPES:
        for existing in STORE_SIZES:
            runs = []
            for shared in (True, False):
                template = workdir / f"store-{element_type}-{existing}-{shared}.template.db"
                _store_template(template, existing, element_type, dim, seed, shared)
                path = workdir / f"store-{element_type}-{existing}-{shared}" / \
                    LayerName.LOCAL.file_name
                path.parent.mkdir(parents=True, exist_ok=True)
                runs.append((template, path, LayerSet({LayerName.LOCAL: path})))

            def write(ls: LayerSet) -> object:
                return ls.append(LayerName.LOCAL, [
                    NewChunk("context.task", text, "mcp", 1.0),
                    NewChunk("meta.context._item", '{"item": 1}', "mcp", 1.0, (1,))],
                    vecs, profile=prof, allowed=(LayerName.LOCAL,))

            def shared_rows(ls: LayerSet = runs[0][2]) -> object:
                return write(ls)

            def row_each(ls: LayerSet = runs[1][2]) -> object:
                with _row_per_event():
                    return write(ls)

            def reset(run: tuple[Path, Path, LayerSet]) -> Callable[[], object]:
                def again() -> None:
                    _fresh_copy(run[0], run[1])
                    run[2].layers()
                return again

            resets = [reset(run) for run in runs]
            now, before = _timed([shared_rows, row_each], resets, repeats)
            out.append(AppendLatency(existing, 2, element_type, now, "store"))
            out.append(AppendLatency(existing, 2, element_type, before, "store, row per event"))
            for t, p, _ls in runs:
                shutil.rmtree(p.parent, ignore_errors=True)
                t.unlink()
    return out

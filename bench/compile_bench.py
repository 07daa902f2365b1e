"""Compile throughput (Markdown in, base layer out) and raw MiniLM embedding throughput."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from bench import corpus
from bench.timing import Stats, repeat
from sediment.embed import Embedder, make_embedder
from sediment.format import LayerFile
from sediment.ingest.compile import CompileOptions, compile_layer


@dataclass(frozen=True, slots=True)
class CompileRun:
    embedder: str
    files: int
    chunks: int
    source_bytes: int
    layer_bytes: int
    seconds: float
    read_s: float
    """Discover, read and chunk every file (up to the last ``reading`` progress call)."""
    embed_s: float
    """From there to the last ``embedding`` progress call (includes the git time lookup)."""
    chars_per_chunk: float
    """Mean length of the chunks' stored content, in characters."""

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.seconds

    @property
    def write_s(self) -> float:
        """Encode, hash and atomically write the layer, after the last embedding batch."""
        return self.seconds - self.read_s - self.embed_s


@dataclass(frozen=True, slots=True)
class EmbedRun:
    texts: int
    words: int
    load_s: float
    """First ``embed`` call of a new MiniLMEmbedder: tokenizer and ONNX session load."""
    batch: Stats
    """One ``embed(texts)`` call over all texts, repeated."""

    @property
    def texts_per_s(self) -> float:
        return self.texts / self.batch.p50


def compile_corpus(workdir: Path, name: str, embedder: Embedder, files: int,
                   element_type: str = "f32") -> CompileRun:
    root = workdir / f"corpus-{name}-{files}"
    source_bytes = corpus.write(root, files)
    marks: dict[str, float] = {}

    def progress(phase: str, done: int, total: int) -> None:
        marks[phase] = time.perf_counter()

    t0 = time.perf_counter()
    opts = CompileOptions(root=root, include=["**/*.md"], out=workdir / f"{name}.db",
                          element_type=element_type)
    report = compile_layer(opts, embedder, progress=progress)
    read_s = marks.get("reading", t0) - t0
    embed_s = marks.get("embedding", t0 + read_s) - (t0 + read_s)
    layer = LayerFile.open(opts.out)
    chars = sum(len(c.content) for c in layer.chunks()) / max(layer.chunk_count, 1)
    return CompileRun(name, report.files, report.chunks, source_bytes, report.bytes,
                      report.seconds, read_s, embed_s, chars)


def warm_minilm() -> tuple[Embedder, float]:
    """A MiniLM embedder without cache, loaded by one embed call; and that call's time."""
    embedder = make_embedder("minilm", cache_path=None)
    t = time.perf_counter()
    embedder.embed(["warm up the model"])
    return embedder, time.perf_counter() - t


def embed_throughput(embedder: Embedder, load_s: float, n: int, repeats: int = 3) -> EmbedRun:
    texts = corpus.short_texts(n)
    stats = repeat(lambda _: embedder.embed(texts), repeats, warmup=1)
    return EmbedRun(n, 10, load_s, stats)


def hash_embedder() -> Embedder:
    return make_embedder("hash", cache_path=None)

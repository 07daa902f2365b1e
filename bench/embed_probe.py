"""Run in a fresh process: ``python -m bench.embed_probe sediment|bare|compile N [DIR]``.

``sediment`` embeds N chunk-sized texts with Sediment's MiniLM embedder; ``bare`` does the
same with a bare onnxruntime loop over the same model file and tokenizer (a default
``InferenceSession``, the texts in their order, 64 at a time, padded to the longest of
each batch, mean-pooled and normalised: what a user of onnxruntime writes first);
``compile`` runs ``compile_layer`` with MiniLM over a generated corpus of N files in DIR.
Prints one JSON object: wall and CPU seconds of the timed part, and this process's peak
RSS (``VmHWM``, which starts afresh at exec) after loading and at the end.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench import corpus, procmem

BARE_BATCH = 64


def chunk_texts(n: int, seed: int = 17, chars: int = 1000) -> list[str]:
    """``n`` texts of about ``chars`` characters (a compiled Markdown section's size)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        text = corpus.paragraph(rng)
        while len(text) < chars:
            text += " " + corpus.paragraph(rng)
        out.append(text[:chars])
    return out


def bare_embedder() -> Any:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from sediment.embed.minilm import MINILM_MAX_TOKENS, MiniLMEmbedder

    files = MiniLMEmbedder()
    session = ort.InferenceSession(str(files._model_file()),
                                   providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(files._tokenizer_file()))
    tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
    tokenizer.enable_padding()

    def embed(texts: list[str]) -> npt.NDArray[np.float32]:
        parts = []
        for start in range(0, len(texts), BARE_BATCH):
            enc = tokenizer.encode_batch(texts[start:start + BARE_BATCH])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            (hidden,) = session.run(["last_hidden_state"], {
                "input_ids": ids, "attention_mask": mask,
                "token_type_ids": np.zeros_like(ids)})
            w = mask[:, :, None].astype(np.float32)
            v = (hidden * w).sum(axis=1) / w.sum(axis=1)
            parts.append(v / np.linalg.norm(v, axis=1, keepdims=True))
        return np.concatenate(parts).astype(np.float32)

    return embed


def main(variant: str, n: int, workdir: Path | None) -> dict[str, Any]:
    if variant == "compile":
        assert workdir is not None
        from bench.compile_bench import compile_corpus
        from sediment.embed import make_embedder

        embedder = make_embedder("minilm", cache_path=None)
        embedder.embed(["warm up"])
        loaded = procmem.status().get("VmHWM", 0)
        cpu, t = time.process_time(), time.perf_counter()
        run = compile_corpus(workdir, "minilm-rss", embedder, n)
        return {"variant": variant, "files": n, "chunks": run.chunks,
                "layer_bytes": run.layer_bytes, "wall_s": time.perf_counter() - t,
                "cpu_s": time.process_time() - cpu, "loaded_rss": loaded,
                "peak_rss": procmem.status().get("VmHWM", 0)}
    texts = chunk_texts(n)
    if variant == "bare":
        embed = bare_embedder()
    else:
        from sediment.embed.minilm import MiniLMEmbedder

        embed = MiniLMEmbedder().embed
    embed(["warm up"])
    loaded = procmem.status().get("VmHWM", 0)
    cpu, t = time.process_time(), time.perf_counter()
    vectors = embed(texts)
    out = {"variant": variant, "texts": n, "wall_s": time.perf_counter() - t,
           "cpu_s": time.process_time() - cpu, "loaded_rss": loaded,
           "peak_rss": procmem.status().get("VmHWM", 0)}
    if workdir is not None:
        np.save(workdir / f"{variant}.npy", vectors)
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]),
                          Path(sys.argv[3]) if len(sys.argv) > 3 else None)))

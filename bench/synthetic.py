"""Deterministic synthetic data: unit vectors, short texts over a small vocabulary, chunks.

Vectors are random normal, L2-normalised float32 (what a real embedder's output looks like
to an exact scan). Texts draw words from a few hundred pseudo-words with Zipf-like
frequencies, so BM25 has common and rare terms to work with.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from sediment.format import Chunk

F32 = npt.NDArray[np.float32]

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "sh", "tr")
_NUCLEI = ("a", "e", "i", "o", "u", "ai")
KINDS = ("canonical", "note", "decision", "howto")
PROFILE: dict[str, object] = {
    "backend": "bench", "model": "random-normal", "revision": "1", "dim": 384,
    "output_norm": "l2",
}
CREATED_AT_MS = 1_700_000_000_000


def vocabulary(size: int = 400) -> list[str]:
    """``size`` distinct two- and three-syllable pseudo-words, in a fixed order."""
    syll = [o + n for o in _ONSETS for n in _NUCLEI]
    words = [a + b for a in syll for b in syll]
    rng = np.random.default_rng(7)
    picked = rng.choice(len(words), size=size, replace=False)
    return [words[i] for i in sorted(picked.tolist())]


def _zipf_p(n: int) -> npt.NDArray[np.float64]:
    p = 1.0 / np.arange(1, n + 1, dtype=np.float64)
    out: npt.NDArray[np.float64] = p / p.sum()
    return out


def unit_vectors(n: int, dim: int, seed: int, block: int = 131072) -> F32:
    """``n`` random normal rows of ``dim`` float32, each scaled to unit length."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, block):
        part = out[start:start + block]
        rng.standard_normal(part.shape, dtype=np.float32, out=part)
        part /= np.sqrt(np.einsum("ij,ij->i", part, part))[:, None]
    return out


def texts(n: int, seed: int, *, min_words: int = 6, max_words: int = 14) -> list[str]:
    """``n`` short texts of ``min_words``..``max_words`` Zipf-distributed words."""
    vocab = np.asarray(vocabulary(), dtype=object)
    rng = np.random.default_rng(seed)
    out: list[str] = []
    block = 100_000
    for start in range(0, n, block):
        m = min(block, n - start)
        idx = rng.choice(len(vocab), size=(m, max_words), p=_zipf_p(len(vocab)))
        lengths = rng.integers(min_words, max_words + 1, size=m).tolist()
        rows = vocab[idx].tolist()
        out.extend(" ".join(row[:k]) for row, k in zip(rows, lengths, strict=True))
    return out


def query_texts(n: int, seed: int) -> list[str]:
    """``n`` two- or three-word queries over the same vocabulary (mid-frequency words)."""
    vocab = vocabulary()
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(2, 4))
        words = rng.choice(np.arange(5, 200), size=k, replace=False).tolist()
        out.append(" ".join(vocab[w] for w in words))
    return out


def chunks(contents: Sequence[str], first_id: int = 1) -> list[Chunk]:
    """One human chunk per text, ids ``first_id``.., kinds cycling through ``KINDS``."""
    return [
        Chunk(first_id + i, KINDS[i % len(KINDS)], text, "human", 1.0, CREATED_AT_MS)
        for i, text in enumerate(contents)
    ]


def profile(dim: int) -> dict[str, object]:
    return {**PROFILE, "dim": dim}


def layer_metadata(dim: int, high_water: int) -> dict[str, object]:
    return {"v": 1, "embedding_profile": profile(dim), "id_high_water": high_water,
            "tool_name": "sediment-bench"}

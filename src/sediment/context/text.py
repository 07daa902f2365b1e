"""Sentences, extractive summaries and the injection block (no LLM, no network)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
HEADER = "## Relevant Context from Previous Iterations"
LABELS = {"skill": "SKILL", "error": "ERROR", "iteration": "ITERATION", "task": "TASK",
          "file": "FILE", "output": "OUTPUT"}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def central_sentences(texts: Sequence[str], embed: Callable[[list[str]], npt.NDArray[np.float32]]
                      | None, k: int = 3) -> str:
    """The ``k`` sentences of ``texts`` nearest the centroid of all their sentences'
    embeddings, in their original order (the first ``k`` when there is no embedder)."""
    sents = [s for t in texts for s in sentences(t)]
    unique = list(dict.fromkeys(sents))
    if len(unique) <= k:
        return " ".join(unique)
    chosen = list(range(k))
    if embed is not None:
        with contextlib.suppress(Exception):  # an embedder failure keeps the first k
            m = np.asarray(embed(unique), dtype=np.float32)
            sims = m @ m.mean(axis=0)
            chosen = sorted(np.argsort(-sims, kind="stable")[:k].tolist())
    return " ".join(unique[i] for i in chosen)


def first_sentences(text: str, fits: Callable[[str], bool]) -> str | None:
    """The longest run of whole leading sentences of ``text`` that ``fits`` (None if even
    the first does not)."""
    best = None
    parts: list[str] = []
    for s in sentences(text):
        parts.append(s)
        candidate = " ".join(parts)
        if not fits(candidate):
            break
        best = candidate
    return best


def block(sections: Sequence[tuple[str, str]]) -> str:
    """The seed's Markdown injection format: a header, then one ``### [TYPE]`` section per
    item, in rank order."""
    out = [HEADER]
    for kind, text in sections:
        out.append(f"\n### [{LABELS.get(kind, kind.upper())}]\n{text}")
    return "\n".join(out) + "\n"

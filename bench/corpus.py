"""A synthetic Markdown corpus in English words, for compile and embedding throughput.

Every file is a ``#`` title with an intro paragraph, then ``##`` sections of one or two
paragraphs; each section fits in one chunk, so a file gives ``sections + 1`` chunks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

_WORD_TEXT = (
    "agent layer context search index vector chunk embedding query result file cache "
    "server client request response token model score rank fusion memory store append "
    "compile source heading section paragraph document note decision review change build "
    "test release branch commit merge conflict version schema profile dimension matrix "
    "scan kernel bandwidth latency throughput batch thread process lock write read open "
    "close path directory config option default value error warning retry timeout limit "
    "the a of to and in is for on with that this by from as be it are was will can should "
    "must may when then if before after every each all some new old first last next "
    "local user delta base project team repository function class method module package "
    "python format record string table header offset length byte integer float quantised "
    "exact approximate recall precision relevant order filter kind author confidence "
    "always never often usually quickly safely cleanly simply carefully explicitly"
)
WORDS = tuple(_WORD_TEXT.split())


def sentence(rng: np.random.Generator, lo: int, hi: int) -> str:
    n = int(rng.integers(lo, hi + 1))
    words = [WORDS[int(i)] for i in rng.integers(0, len(WORDS), size=n)]
    return " ".join(words).capitalize() + "."


def paragraph(rng: np.random.Generator) -> str:
    return " ".join(sentence(rng, 8, 16) for _ in range(int(rng.integers(3, 6))))


def document(rng: np.random.Generator, number: int, sections: int) -> str:
    parts = [f"# Topic {number}: {sentence(rng, 2, 4)[:-1]}", "", paragraph(rng), ""]
    for s in range(sections):
        parts += [f"## Part {s + 1}: {sentence(rng, 2, 4)[:-1]}", "", paragraph(rng), ""]
        if rng.random() < 0.4:
            parts += [paragraph(rng), ""]
    return "\n".join(parts)


def write(root: Path, files: int, *, sections: int = 9, seed: int = 11) -> int:
    """Write ``files`` Markdown files under ``root`` (in 10 folders); return bytes written."""
    rng = np.random.default_rng(seed)
    total = 0
    for i in range(files):
        path = root / f"area{i % 10}" / f"doc{i:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = document(rng, i, sections)
        path.write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def short_texts(n: int, seed: int = 5, words: int = 10) -> list[str]:
    """``n`` texts of ``words`` words, like a one-line agent note or a search query."""
    rng = np.random.default_rng(seed)
    return [sentence(rng, words, words) for _ in range(n)]

"""Real text for the peers benchmark: the glosses of WordNet 3.0 (117,659 synsets).

The corpus comes from Debian's ``wordnet-base`` package (``apt-get download wordnet-base``,
then ``dpkg-deb -x``), a package registry this project may use; its ``data.noun``,
``data.verb``, ``data.adj`` and ``data.adv`` hold one synset a line. Each synset becomes one
passage, ``"lemma, lemma: gloss"`` (a definition, often with example sentences), in file
order. Embedding all of them with Sediment's MiniLM embedder takes a while, so the vectors
are cached in a ``.npy`` file outside the repository and reused when present.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from pathlib import Path

POS_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")


def passages(root: Path) -> Iterator[str]:
    """Every synset of the WordNet database under ``root`` as one passage."""
    for name in POS_FILES:
        with (root / name).open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("  ") or " | " not in line:
                    continue
                head, gloss = line.split(" | ", 1)
                fields = head.split()
                count = int(fields[3], 16)
                lemmas = [w.replace("_", " ") for w in fields[4:4 + 2 * count:2]]
                yield f"{', '.join(lemmas)}: {gloss.strip()}"


def embed(root: Path, out: Path, block: int = 4096) -> None:
    """Embed every passage with Sediment's MiniLM embedder and save them to ``out``
    (written to a temporary name, then renamed: a killed run leaves no partial cache)."""
    import numpy as np

    from sediment.embed.minilm import MINILM_DIM, MiniLMEmbedder

    texts = list(passages(root))
    embedder = MiniLMEmbedder()
    vectors = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
    t = time.perf_counter()
    for start in range(0, len(texts), block):
        vectors[start:start + block] = embedder.embed(texts[start:start + block])
        done = min(start + block, len(texts))
        print(f"{done:,} / {len(texts):,} passages, {time.perf_counter() - t:.0f} s",
              file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial.npy")
    np.save(tmp, vectors)
    tmp.replace(out)


def main(argv: list[str] | None = None) -> int:
    from bench.peers.data import MINILM_CACHE

    p = argparse.ArgumentParser(prog="python -m bench.peers.wordnet", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, default=Path("/usr/share/wordnet"),
                   help="the directory holding data.noun and the other data files")
    p.add_argument("--out", type=Path, default=MINILM_CACHE)
    a = p.parse_args(argv)
    embed(a.root, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The safety margin of the injection budget's token count (docs/context.md).

Counts a sample with the offline WordPiece counter (``sediment.context.tokens.raw_count``)
and with a reference count read from a JSON file (one number per text, same order),
produced by a chat-model tokenizer outside Python, e.g. js-tiktoken's cl100k_base /
o200k_base under node. Prints the per-text ratio reference / WordPiece: the margin must
cover its maximum, so no block counted within budget exceeds it for the reference.

    python -m bench.context_tokens sample.json reference.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from sediment.context.tokens import SAFETY_MARGIN, raw_count


def main(argv: list[str]) -> int:
    texts = json.loads(Path(argv[0]).read_text())
    refs = json.loads(Path(argv[1]).read_text())
    for name, counts in refs.items():
        ratios = sorted(r / max(1, raw_count(t)) for t, r in zip(texts, counts, strict=True))
        total = sum(counts) / sum(raw_count(t) for t in texts)
        p99 = ratios[int(0.99 * (len(ratios) - 1))]
        print(f"{name}: {len(texts)} texts; reference/WordPiece total {total:.3f}, median "
              f"{statistics.median(ratios):.3f}, p99 {p99:.3f}, max {ratios[-1]:.3f}; "
              f"margin {SAFETY_MARGIN} covers max: {ratios[-1] <= SAFETY_MARGIN}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``python -m bench.memory_dedup``: precision and recall of the dedup decision.

Each pair of ``bench.memory_pairs`` (213 pairs, written for this benchmark) is embedded
with the default embedder; a pair is judged "same memory" when the cosine similarity
reaches the threshold, or when the new text is a value swap of the old one at cosine
``SWAP_FLOOR`` or above (``sediment.memory.correction.same_memory``, the service's own
decision); the cosine-only decision is shown beside it. Same-memory pairs are paraphrases
and corrections; different pairs are related facts about the same subject. The default
threshold is the one with the best precision among those whose recall on same-memory
pairs is at least 0.9. The correction
signals (``sediment.memory.correction``) are scored on the pairs that would supersede.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench.memory_pairs import PAIRS
from bench.quality.__main__ import DEFAULT_CACHE, make_embedder
from sediment.memory.correction import correction_signals, same_memory, value_swap

THRESHOLDS = [round(0.60 + 0.01 * i, 2) for i in range(36)]
RANGE = (0.75, 0.95)
MIN_RECALL = 0.9


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.memory_dedup", description=__doc__)
    p.add_argument("--embedder", default="minilm", choices=("minilm", "hash"))
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args(argv)
    embedder = make_embedder(opts.embedder, opts.cache)
    old = embedder.embed([a for a, _, _, _ in PAIRS])
    new = embedder.embed([b for _, b, _, _ in PAIRS])
    cos = np.sum(old * new, axis=1) / (np.linalg.norm(old, axis=1) *
                                       np.linalg.norm(new, axis=1))
    same = np.asarray([s for _, _, s, _ in PAIRS])
    corr = np.asarray([c for _, _, _, c in PAIRS])
    rows = []
    print(f"{len(PAIRS)} pairs: {int(same.sum())} same ({int(corr.sum())} corrections), "
          f"{int((~same).sum())} different\n")
    swaps = np.asarray([value_swap(a, b) for a, b, _, _ in PAIRS])
    print(f"value swaps: {int((swaps & corr).sum())} corrections, "
          f"{int((swaps & same & ~corr).sum())} paraphrases, {int((swaps & ~same).sum())} "
          "different\n")
    print("| threshold | precision | recall | paraphrases kept | corrections kept | "
          "different merged | cosine only: precision | recall |\n"
          "|---|---|---|---|---|---|---|---|")
    for t in THRESHOLDS:
        pred = np.asarray([same_memory(a, b, float(x), t)
                           for (a, b, _, _), x in zip(PAIRS, cos, strict=True)])
        plain = cos >= t
        plain_tp = int((plain & same).sum())
        plain_p = plain_tp / max(int(plain.sum()), 1)
        tp = int((pred & same).sum())
        fp = int((pred & ~same).sum())
        precision = tp / max(tp + fp, 1)
        recall = tp / max(int(same.sum()), 1)
        para = same & ~corr
        rows.append({"threshold": t, "precision": precision, "recall": recall,
                     "paraphrase_recall": float((pred & para).sum() / para.sum()),
                     "correction_recall": float((pred & corr).sum() / corr.sum()),
                     "false_merges": fp})
        r = rows[-1]
        r["cosine_precision"] = plain_p
        r["cosine_recall"] = plain_tp / max(int(same.sum()), 1)
        print(f"| {t:.2f} | {precision:.3f} | {recall:.3f} | {r['paraphrase_recall']:.3f} | "
              f"{r['correction_recall']:.3f} | {fp} | {plain_p:.3f} | "
              f"{r['cosine_recall']:.3f} |")
    ok = [r for r in rows if r["recall"] >= MIN_RECALL
          and RANGE[0] <= r["threshold"] <= RANGE[1]]
    chosen = max(ok, key=lambda r: (r["precision"], r["threshold"])) if ok else None
    flagged = np.asarray([bool(correction_signals(a, b)) for a, b, _, _ in PAIRS])
    sup = same
    tp = int((flagged & corr & sup).sum())
    print(f"\ncorrection signals on same-memory pairs: {tp}/{int(corr.sum())} corrections "
          f"flagged, {int((flagged & ~corr & sup).sum())}/{int((~corr & sup).sum())} "
          "paraphrases flagged")
    for label, mask in (("paraphrase", same & ~corr), ("correction", corr),
                        ("different", ~same)):
        v = cos[mask]
        print(f"cosine of {label} pairs: median {np.median(v):.3f}, "
              f"min {v.min():.3f}, max {v.max():.3f}")
    if chosen is None:
        best = max(rows, key=lambda r: r["recall"])
        print(f"\nno threshold in 0.75-0.95 reaches recall {MIN_RECALL}; the best recall in "
              f"the whole sweep is {best['recall']:.3f} at {best['threshold']:.2f}")
    else:
        print(f"\nchosen: {chosen['threshold']:.2f} (precision {chosen['precision']:.3f}, "
              f"recall {chosen['recall']:.3f})")
    if opts.json:
        opts.json.write_text(json.dumps({"rows": rows, "chosen": chosen}, indent=2))


if __name__ == "__main__":
    main()

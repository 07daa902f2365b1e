"""``python -m bench.memory_dedup``: precision and recall of the dedup decision.

Each pair of ``bench.memory_pairs`` (333 pairs written for this benchmark: 111 originals,
each with a paraphrase; 71 with a correction and a related fact, 40 everyday memories with
two related facts) is embedded with the default embedder. Same-memory pairs are
paraphrases and corrections; different pairs are related facts about the same subject.

Two decisions are compared, per cosine threshold:

- the old rule: cosine at the threshold, or a value swap at ``SWAP_FLOOR``;
- the new rule (:func:`same_memory`, the service's until issue 27, kept here as measured;
  its save decision is measured by ``bench.memory_decisions``): cosine at the threshold
  with at most K content words changed, or cosine at ``NEAR_IDENTICAL``, or
  a value swap at ``SWAP_FLOOR``.

The new rule's two parameters (threshold and K) are fitted on the pairs of the even rows
(``memory_pairs.GROUPS``): the best precision among the settings whose recall on
same-memory pairs is at least 0.9, thresholds 0.75-0.95; ties go to the higher threshold,
then the smaller K. The tables are reported on the odd rows, which the fit never saw, and
on all pairs.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.memory_pairs import GROUPS, PAIRS
from bench.quality.__main__ import DEFAULT_CACHE, make_embedder
from sediment.memory.correction import content_words, correction_signals

NEAR_IDENTICAL = 0.95
"""The cosine at which two memories are the same whatever words changed (a restatement)."""
MAX_CHANGED_WORDS = 4
"""Below ``NEAR_IDENTICAL``, the most content words one side may have that the other lacks
(fitted on half of bench/memory_pairs.py, see docs/memory.md)."""
SWAP_FLOOR = 0.55
"""The least cosine at which a value swap (:func:`value_swap`) counts as the same memory."""
MAX_SWAP_WORDS = 3
_TOKEN = re.compile(r"[\w'-]+(?:\.\w+)*")


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def value_swap(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` with one value replaced: a single run of at most
    ``MAX_SWAP_WORDS`` words differs on each side, and at least two words around it are
    the same ("The frontend is built with React" -> "... with Svelte").

    Cosine over the whole sentence scores such a correction low (0.54-0.68 for the value
    swaps of bench/memory_pairs.py with MiniLM), since the value is most of what a short
    fact says; the words around it show it is the same statement (docs/memory.md)."""
    a, b = _tokens(old), _tokens(new)
    changes = [op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
               if op[0] != "equal"]
    if len(changes) != 1:
        return False
    _, i1, i2, j1, j2 = changes[0]
    return (0 < i2 - i1 <= MAX_SWAP_WORDS and 0 < j2 - j1 <= MAX_SWAP_WORDS
            and len(a) - (i2 - i1) >= 2)


def changed_words(old: str, new: str) -> int:
    """How many content words one text has that the other lacks (the larger side)."""
    a, b = content_words(old), content_words(new)
    return max(len(a - b), len(b - a))


def same_memory(old: str, new: str, cosine: float, threshold: float,
                max_changed: int = MAX_CHANGED_WORDS) -> bool:
    """The dedup decision. Cosine is the gate, and says too little alone: two statements
    about the same person and subject score as high as a paraphrase. So a new memory is the
    same memory as the old one when

    - the cosine reaches the threshold and at most ``max_changed`` content words differ
      (a restatement rewords a few words; a related statement brings its own), or
    - the cosine reaches ``NEAR_IDENTICAL`` (the threshold, if higher), or
    - it is a value swap at ``SWAP_FLOOR`` or above (a correction of one value).

    A threshold of 1.0 turns dedup off (only identical text is the same memory)."""
    if cosine >= max(threshold, NEAR_IDENTICAL):
        return True
    if threshold >= 1.0:
        return False
    if cosine >= threshold and changed_words(old, new) <= max_changed:
        return True
    return cosine >= SWAP_FLOOR and value_swap(old, new)


THRESHOLDS = [round(0.70 + 0.01 * i, 2) for i in range(26)]
RANGE = (0.75, 0.95)
MIN_RECALL = 0.9
KS = range(1, 7)

Mask = npt.NDArray[np.bool_]


def _score(pred: Mask, same: Mask, part: Mask) -> dict[str, float]:
    tp = int((pred & same & part).sum())
    fp = int((pred & ~same & part).sum())
    return {"precision": tp / max(tp + fp, 1), "recall": tp / max(int((same & part).sum()), 1),
            "false_merges": fp}


def _table(title: str, old: dict[float, Mask], new: dict[float, Mask], same: Mask,
           corr: Mask, part: Mask) -> list[dict[str, Any]]:
    print(f"\n{title}: {int(part.sum())} pairs, {int((same & part).sum())} same "
          f"({int((corr & part).sum())} corrections), {int((~same & part).sum())} different\n")
    print("| threshold | old: precision | old: recall | old: different merged | "
          "new: precision | new: recall | new: paraphrases kept | new: corrections kept | "
          "new: different merged |\n|---|---|---|---|---|---|---|---|---|")
    rows = []
    para = same & ~corr & part
    for t in THRESHOLDS:
        o, n = _score(old[t], same, part), _score(new[t], same, part)
        row = {"threshold": t, "old": o, "new": n,
               "paraphrase_recall": float((new[t] & para).sum() / max(int(para.sum()), 1)),
               "correction_recall": float((new[t] & corr & part).sum()
                                          / max(int((corr & part).sum()), 1))}
        rows.append(row)
        print(f"| {t:.2f} | {o['precision']:.3f} | {o['recall']:.3f} | {o['false_merges']} | "
              f"{n['precision']:.3f} | {n['recall']:.3f} | {row['paraphrase_recall']:.3f} | "
              f"{row['correction_recall']:.3f} | {n['false_merges']} |")
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.memory_dedup", description=__doc__)
    p.add_argument("--embedder", default="minilm", choices=("minilm", "hash"))
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args(argv)
    embedder = make_embedder(opts.embedder, opts.cache)
    a_vec = embedder.embed([a for a, _, _, _ in PAIRS])
    b_vec = embedder.embed([b for _, b, _, _ in PAIRS])
    cos = np.sum(a_vec * b_vec, axis=1) / (np.linalg.norm(a_vec, axis=1) *
                                           np.linalg.norm(b_vec, axis=1))
    same = np.asarray([s for _, _, s, _ in PAIRS])
    corr = np.asarray([c for _, _, _, c in PAIRS])
    fit = np.asarray([g % 2 == 0 for g in GROUPS])
    swaps = np.asarray([value_swap(a, b) for a, b, _, _ in PAIRS])
    changed = np.asarray([changed_words(a, b) for a, b, _, _ in PAIRS])

    def new_rule(t: float, k: int) -> Mask:
        return np.asarray([same_memory(a, b, float(x), t, k)
                           for (a, b, _, _), x in zip(PAIRS, cos, strict=True)])

    fits = []
    for k in KS:
        for t in THRESHOLDS:
            if RANGE[0] <= t <= RANGE[1]:
                sc = _score(new_rule(t, k), same, fit)
                if sc["recall"] >= MIN_RECALL:
                    fits.append((sc["precision"], t, -k, sc))
    chosen = max(fits, key=lambda f: f[:3]) if fits else None
    k_best = -chosen[2] if chosen else MAX_CHANGED_WORDS
    print(f"{len(PAIRS)} pairs; fit half (even rows) {int(fit.sum())}, report half (odd rows) "
          f"{int((~fit).sum())}")
    if chosen is not None:
        print(f"fitted on the even rows: threshold {chosen[1]:.2f}, K {k_best} (precision "
              f"{chosen[0]:.3f}, recall {chosen[3]['recall']:.3f}); the service's K is "
              f"{MAX_CHANGED_WORDS}")
    old = {t: (cos >= t) | (swaps & (cos >= SWAP_FLOOR)) for t in THRESHOLDS}
    new = {t: new_rule(t, k_best) for t in THRESHOLDS}
    report = _table("report half (odd rows, not fitted on)", old, new, same, corr, ~fit)
    every = _table("all pairs", old, new, same, corr, np.ones_like(fit))
    for name, rows in (("report half", report), ("all pairs", every)):
        for rule in ("old", "new"):
            ok = [r for r in rows if r[rule]["recall"] >= MIN_RECALL
                  and RANGE[0] <= r["threshold"] <= RANGE[1]]
            best = max(ok, key=lambda r: (r[rule]["precision"], r["threshold"])) if ok \
                else None
            print(f"{name}, {rule} rule: " + (
                f"best precision at recall >= {MIN_RECALL}: {best[rule]['precision']:.3f} "
                f"at {best['threshold']:.2f} (recall {best[rule]['recall']:.3f})" if best
                else f"no threshold in 0.75-0.95 reaches recall {MIN_RECALL}"))
    print(f"\nvalue swaps: {int((swaps & corr).sum())} corrections, "
          f"{int((swaps & same & ~corr).sum())} paraphrases, {int((swaps & ~same).sum())} "
          "different")
    for label, mask in (("paraphrase", same & ~corr), ("correction", corr),
                        ("different", ~same)):
        v = cos[mask]
        print(f"{label} pairs: cosine median {np.median(v):.3f}, min {v.min():.3f}, max "
              f"{v.max():.3f}; content words changed: "
              f"{np.bincount(changed[mask], minlength=7).tolist()} (0, 1, 2, ...)")
    flagged = np.asarray([bool(correction_signals(a, b)) for a, b, _, _ in PAIRS])
    print(f"correction signals: {int((flagged & corr).sum())}/{int(corr.sum())} corrections "
          f"flagged, {int((flagged & same & ~corr).sum())}/{int((same & ~corr).sum())} "
          "paraphrases flagged")
    if opts.json:
        opts.json.write_text(json.dumps({
            "fitted": {"threshold": chosen[1], "k": k_best} if chosen else None,
            "report_half": report, "all": every}, indent=2))


if __name__ == "__main__":
    main()

"""``python -m bench.memory_decisions``: how well the save decision tells a restatement, a
correction, a different fact about the same subject and an unrelated memory apart.

Two sets:

- ``bench/data/memory_pairs.jsonl``: pairs (old memory, new save) written for Sediment in
  the style agents save, labelled ``restatement``, ``correction``, ``different`` (another
  fact about the same subject) or ``unrelated``, split by row into a ``fit`` half and a
  ``report`` half. The decision's two paraphrase parameters (``decision.PARAPHRASE_COSINE``
  and ``PARAPHRASE_WORDS``) are chosen on the fit half by ``--fit``: the most restatements
  superseded with at most 3% of different facts merged; the report half is never fitted on.
- MRPC (the Microsoft Research Paraphrase Corpus, public, not written by us and not fitted
  on): ``msr_paraphrase_test.txt`` under ``--mrpc`` (default /work/data/mrpc); skipped with
  a message when absent. A paraphrase should supersede, a non-paraphrase should be kept.

The embedder is the server's default (MiniLM, ONNX) with an embedding cache; the memory
unit tests use the hash embedder, which ``--embedder hash`` measures too.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality.__main__ import DEFAULT_CACHE, make_embedder
from sediment.embed import Embedder
from sediment.memory.decision import PARAPHRASE_COSINE, PARAPHRASE_WORDS, Verdict, decide

PAIRS = Path(__file__).parent / "data" / "memory_pairs.jsonl"
MRPC = Path("/work/data/mrpc")
MAX_MERGED = 0.03
LABELS = ("restatement", "correction", "different", "unrelated")


def load_pairs(path: Path = PAIRS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cosines(embedder: Embedder, olds: Sequence[str], news: Sequence[str]) -> list[float]:
    a = np.asarray(embedder.embed(list(olds)), dtype=np.float32)
    b = np.asarray(embedder.embed(list(news)), dtype=np.float32)
    num = np.sum(a * b, axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return [float(x) for x in num / np.where(den == 0, 1.0, den)]


def verdicts(rows: Sequence[dict[str, Any]], cos: Sequence[float], pc: float, pw: int
             ) -> list[Verdict]:
    return [decide(r["old"], r["new"], c, paraphrase_cosine=pc, paraphrase_words=pw,
                   correcting=r.get("category") == "correction"
                   or r.get("source") == "corrected").verdict
            for r, c in zip(rows, cos, strict=True)]


def rates(rows: Sequence[dict[str, Any]], got: Sequence[Verdict]) -> dict[str, Any]:
    """Per label: how many pairs, how many superseded, how many flagged a correction."""
    out: dict[str, Any] = {}
    for label in LABELS:
        mine = [v for r, v in zip(rows, got, strict=True) if r["label"] == label]
        merged = sum(v in (Verdict.RESTATEMENT, Verdict.CORRECTION) for v in mine)
        flagged = sum(v is Verdict.CORRECTION for v in mine)
        out[label] = {"pairs": len(mine), "superseded": merged,
                      "superseded_rate": merged / max(len(mine), 1),
                      "flagged": flagged, "flagged_rate": flagged / max(len(mine), 1)}
    return out


def fit(rows: Sequence[dict[str, Any]], cos: Sequence[float]) -> tuple[float, int]:
    """The paraphrase parameters that supersede the most restatements and corrections of
    ``rows`` with at most ``MAX_MERGED`` of different facts merged (ties: higher cosine,
    fewer words)."""
    best: tuple[float, float, int] | None = None
    for pc in [round(0.70 + 0.01 * i, 2) for i in range(26)]:
        for pw in range(1, 7):
            r = rates(rows, verdicts(rows, cos, pc, pw))
            if r["different"]["superseded_rate"] > MAX_MERGED:
                continue
            hit = r["restatement"]["superseded"] + r["correction"]["flagged"]
            key = (float(hit), pc, -pw)
            if best is None or key > best:
                best = key
    if best is None:
        return PARAPHRASE_COSINE, PARAPHRASE_WORDS
    return best[1], -best[2]


def _print(title: str, r: dict[str, Any]) -> None:
    print(f"\n{title}")
    print("| class | pairs | superseded | flagged as correction |\n|---|---|---|---|")
    for label in LABELS:
        x = r[label]
        print(f"| {label} | {x['pairs']} | {x['superseded']} ({100 * x['superseded_rate']:.1f}%)"
              f" | {x['flagged']} ({100 * x['flagged_rate']:.1f}%) |")
    print(f"targets: different merged {100 * r['different']['superseded_rate']:.1f}% (<= 3%), "
          f"restatements superseded {100 * r['restatement']['superseded_rate']:.1f}% "
          f"(>= 95%), corrections superseding and flagged "
          f"{100 * r['correction']['flagged_rate']:.1f}% (>= 90%)")


def load_mrpc(root: Path) -> list[dict[str, Any]] | None:
    path = root / "msr_paraphrase_test.txt"
    if not path.is_file():
        return None
    rows = []
    for line in path.read_text(encoding="utf-8-sig").splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) == 5:
            rows.append({"old": parts[3], "new": parts[4],
                         "label": "restatement" if parts[0] == "1" else "different"})
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.memory_decisions", description=__doc__)
    p.add_argument("--embedder", default="minilm", choices=("minilm", "hash"))
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--pairs", type=Path, default=PAIRS)
    p.add_argument("--mrpc", type=Path, default=MRPC)
    p.add_argument("--fit", action="store_true",
                   help="choose the paraphrase parameters on the fit half and report with "
                        "them (default: the service's own)")
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args(argv)
    embedder = make_embedder(opts.embedder, opts.cache)
    rows = load_pairs(opts.pairs)
    cos = cosines(embedder, [r["old"] for r in rows], [r["new"] for r in rows])
    halves = {h: [i for i, r in enumerate(rows) if r["half"] == h] for h in ("fit", "report")}
    pc, pw = PARAPHRASE_COSINE, PARAPHRASE_WORDS
    fitted = fit([rows[i] for i in halves["fit"]], [cos[i] for i in halves["fit"]])
    print(f"{len(rows)} pairs ({opts.pairs.name}), embedder {opts.embedder}; fitted on the fit "
          f"half: paraphrase cosine {fitted[0]:.2f}, words {fitted[1]}; the service's: "
          f"{pc:.2f}, {pw}")
    if opts.fit:
        pc, pw = fitted
    out: dict[str, Any] = {"params": {"paraphrase_cosine": pc, "paraphrase_words": pw}}
    for half, idx in (*halves.items(), ("all", list(range(len(rows))))):
        part = [rows[i] for i in idx]
        out[half] = rates(part, verdicts(part, [cos[i] for i in idx], pc, pw))
        _print(f"{half} half" if half != "all" else "all pairs", out[half])
    started = time.process_time()
    for _ in range(5):
        verdicts(rows, cos, pc, pw)
    per_pair = (time.process_time() - started) / (5 * len(rows)) * 1000
    out["decide_cpu_ms_per_pair"] = per_pair
    print(f"\ndecide(): {per_pair:.3f} ms of CPU per pair (mean over 5 passes of the set)")
    mrpc = load_mrpc(opts.mrpc)
    if mrpc is None:
        print(f"\nMRPC: skipped, no msr_paraphrase_test.txt under {opts.mrpc}")
    else:
        mc = cosines(embedder, [r["old"] for r in mrpc], [r["new"] for r in mrpc])
        out["mrpc"] = r = rates(mrpc, verdicts(mrpc, mc, pc, pw))
        print(f"\nMRPC test set ({len(mrpc)} pairs, not fitted on): paraphrases superseded "
              f"{r['restatement']['superseded']}/{r['restatement']['pairs']} "
              f"({100 * r['restatement']['superseded_rate']:.1f}%), non-paraphrases merged "
              f"{r['different']['superseded']}/{r['different']['pairs']} "
              f"({100 * r['different']['superseded_rate']:.1f}%)")
    if opts.json:
        opts.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

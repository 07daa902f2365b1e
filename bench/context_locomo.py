"""``python -m bench.context_locomo``: does feedback help? LoCoMo replayed as a loop.

Each conversation is one run: session N is iteration N and its turns are stored as
``output`` items (``"<speaker>: <text>"``, vectors from the embedder, appended in bulk).
Every question is asked at the same point, after the last session, and recall@5 of its
evidence turns is measured for three retrievers:

- ``plain``: Sediment's hybrid search (``sediment.search``) over the same layer file;
- ``ranked``: ``get_relevant_context`` (multi-factor ranking) with no feedback, asked of
  the same file as ``plain`` (before any feedback event: events count in the file's BM25
  statistics, so asking later would shift both sides a little);
- ``feedback``: the same after ``mark_useful(helpful, query=<that question>)`` on the
  evidence items of the conversation's *earlier* questions only (never the question being
  measured), once per ``--feedback-similarity`` x ``--feedback-gain`` pair
  (``feedback@<similarity>,<gain>``; the votes are the same, only the ranking differs).

Prints each recall@5 and the differences with 95% bootstrap intervals (over questions,
2,000 resamples), as JSON. The data stays in ../shared (measurement only).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality.__main__ import DEFAULT_CACHE, make_embedder
from bench.quality.locomo import load, memory_text
from sediment.context import ContextLoop, ContextSettings, FileContextStore, NewEvent, NewItem
from sediment.context.state import ITEM_EVENT
from sediment.search import SearchRequest, search
from sediment.store import LayerName

K = 5


def _session(dia_id: str) -> int:
    return int(dia_id[1:].split(":")[0])


def _interval(values: np.ndarray, rng: np.random.Generator) -> list[float]:
    idx = rng.integers(0, len(values), (2000, len(values)))
    means = values[idx].mean(axis=1)
    return [round(float(np.percentile(means, 2.5)) * 100, 2),
            round(float(np.percentile(means, 97.5)) * 100, 2)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=None)
    ap.add_argument("--offset", type=int, default=0, help="Skip the first N conversations.")
    ap.add_argument("--recency-decay", type=float, default=0.1,
                    help="[context] recency_decay for the ranked retrievers.")
    ap.add_argument("--feedback-reach", type=int, default=ContextSettings().feedback_reach,
                    help="[context] feedback_reach for the ranked retrievers.")
    ap.add_argument("--feedback-similarity", type=float, nargs="+",
                    default=[ContextSettings().feedback_similarity],
                    help="[context] feedback_similarity value(s) for the feedback run.")
    ap.add_argument("--feedback-gain", type=float, nargs="+",
                    default=[ContextSettings().feedback_gain],
                    help="[context] feedback_gain value(s) for the feedback run.")
    ap.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = ap.parse_args(argv)
    embedder = make_embedder(args.embedder, args.cache)
    started = time.perf_counter()
    variants = [(t, g) for g in args.feedback_gain for t in args.feedback_similarity]
    arms = [f"feedback@{t:g},{g:g}" for t, g in variants]
    hits: dict[str, list[float]] = {"plain": [], "ranked": [], **{a: [] for a in arms}}
    settings = ContextSettings(recency_decay=args.recency_decay,
                               feedback_reach=args.feedback_reach)
    convs = load()[args.offset:]
    for conv in convs[:args.conversations]:
        with tempfile.TemporaryDirectory() as tmp:
            store = FileContextStore(Path(tmp), profile=embedder.profile.to_dict(),
                                     dim=embedder.profile.dim,
                                     embedder_metadata=embedder.metadata())
            texts = [memory_text(t, "speaker") for t in conv.turns]
            vecs = embedder.embed(texts)
            items = [NewItem("context.output", t, "mcp", v) for t, v in zip(texts, vecs,
                                                                             strict=True)]
            events = [NewEvent(ITEM_EVENT, {
                "event": "store", "item": -1 - i, "actor": "bench", "project": "locomo",
                "run_id": conv.sample_id, "iteration": _session(t.dia_id), "type": "output",
                "tags": [], "metadata": {"dia_id": t.dia_id}, "embedded": True,
                "summary_of": []}, (-1 - i,)) for i, t in enumerate(conv.turns)]
            ids = store.append(items, events)
            dia_of = {cid: t.dia_id for cid, t in zip(ids, conv.turns, strict=True)}
            id_of = {d: c for c, d in dia_of.items()}
            loop = ContextLoop(store, embedder, settings, project="locomo")
            ls = store.layers
            qs = [q for q in conv.questions if q.category != "adversarial"]
            # first plain and ranked on the store as written (no feedback event yet) ...
            for q in qs:
                qv = embedder.embed([q.text])[0]
                plain = search(ls, SearchRequest(text=q.text, k=K, kinds=("context.output",),
                                                 layers=(LayerName.LOCAL,)), qv,
                               normalised=True)
                found = {dia_of[h.id] for h in plain.hits if h.id in dia_of}
                hits["plain"].append(len(found & q.evidence) / len(q.evidence))
                hits["ranked"].append(_recall(loop, q.text, dia_of, q.evidence))
            # ... then each question after feedback on the earlier questions' evidence
            for q in qs:
                for arm, (t, g) in zip(arms, variants, strict=True):
                    loop.settings = replace(settings, feedback_similarity=t, feedback_gain=g)
                    hits[arm].append(_recall(loop, q.text, dia_of, q.evidence))
                for d in q.evidence:
                    if d in id_of:
                        loop.mark_useful("bench", f"c{id_of[d]}", True,
                                         query=q.text)
    rng = np.random.default_rng(17)
    arr = {k: np.asarray(v) for k, v in hits.items()}
    out: dict[str, Any] = {"questions": len(arr["plain"]), "k": K, "args": vars(args) | {
                               "cache": str(args.cache)},
                           "seconds": round(time.perf_counter() - started, 1)}
    for k, v in arr.items():
        out[f"recall@5 {k}"] = {"mean": round(float(v.mean()) * 100, 2),
                                "ci95": _interval(v, rng)}
    pairs = [("ranked", "plain")] + [(a, b) for a in arms for b in ("ranked", "plain")]
    for a, b in pairs:
        d = arr[a] - arr[b]
        out[f"{a} - {b}"] = {"mean": round(float(d.mean()) * 100, 2),
                             "ci95": _interval(d, rng)}
    print(json.dumps(out, indent=2))
    return 0


def _recall(loop: ContextLoop, query: str, dia_of: dict[int, str], evidence: frozenset[str]
            ) -> float:
    got = loop.get_relevant_context("bench", query, K, None, 0.0)["items"]
    return len({dia_of[int(d["id"][1:])] for d in got} & evidence) / len(evidence)


if __name__ == "__main__":
    raise SystemExit(main())

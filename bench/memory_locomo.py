"""``python -m bench.memory_locomo``: LoCoMo through the memory tools.

Every turn of a conversation is saved as a memory (category fact, one actor per
conversation, user scope) through ``MemoryService.save`` exactly as an agent's
``save_memory`` would be, then every question is asked through ``recall_memories``
(limit 10). Beside it: plain hybrid search over the same turns written as ordinary chunks
(``bench.quality.locomo.write_memories``), and the memory path with dedup off (threshold
1.0, only identical text supersedes), so the cost of dedup is measured, not guessed.

recall@k counts a question as answered when a returned memory is one of its evidence turns
(a superseded turn no longer answers: that is the price of dedup). The data stays in
``../shared/datasets/locomo`` (CC BY-NC 4.0, measurement only).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.quality import locomo
from bench.quality.__main__ import DEFAULT_CACHE, make_embedder
from bench.quality.metrics import Scores
from sediment.embed import Embedder
from sediment.memory import DEFAULT_DEDUP_THRESHOLD, FileMemoryStore, MemoryService
from sediment.memory.decision import PARAPHRASE_WORDS as MAX_CHANGED_WORDS
from sediment.ops import run_search
from sediment.search import SearchRequest
from sediment.store import LayerSet

STYLE: locomo.MemoryText = "speaker"


def _memory_run(conv: locomo.Conversation, embedder: Embedder, threshold: float,
                root: Path, max_changed: int | None = MAX_CHANGED_WORDS
                ) -> tuple[Scores, int, float, float]:
    (root / "project").mkdir(parents=True)
    store = FileMemoryStore(LayerSet.from_directory(root / "project"), root / "data",
                            profile=embedder.profile.to_dict(), dim=embedder.profile.dim,
                            embedder_metadata=embedder.metadata())
    svc = MemoryService(store, embedder, dedup_threshold=threshold,
                        max_changed_words=max_changed)
    actor = "locomo"
    label: dict[str, str] = {}
    supersessions = 0
    t = time.perf_counter()
    for turn in conv.turns:
        out = svc.save(actor, locomo.memory_text(turn, STYLE), "fact", "explicit")
        label[out["id"]] = turn.dia_id
        supersessions += out["status"] == "updated"
    save_s = time.perf_counter() - t
    scores = Scores()
    t = time.perf_counter()
    for q in conv.questions:
        got = svc.recall(actor, q.text, limit=10, count_use=False)["memories"]
        scores.add([label[m["id"]] for m in got], q.evidence)
    return scores, supersessions, save_s, time.perf_counter() - t


def _plain_run(conv: locomo.Conversation, embedder: Embedder, root: Path) -> Scores:
    root.mkdir(parents=True)
    labels = locomo.write_memories(conv, root, embedder, STYLE)
    ls = LayerSet.from_directory(root)
    scores = Scores()
    for q in conv.questions:
        hits = run_search(ls, SearchRequest(text=q.text, k=10), embedder=embedder).hits
        scores.add([labels[h.chunk.id] for h in hits], q.evidence)
    return scores


Setting = tuple[float, int | None]


def _setting(text: str) -> Setting:
    threshold, _, k = text.strip().partition("/")
    if not k:
        return float(threshold), MAX_CHANGED_WORDS
    return float(threshold), None if k == "any" else int(k)


def _label(s: Setting) -> str:
    return f"{s[0]:.2f}, cosine alone" if s[1] is None else f"{s[0]:.2f}, K {s[1]}"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.memory_locomo", description=__doc__)
    p.add_argument("--conversations", type=int, default=None, help="only the first N")
    p.add_argument("--thresholds", default=str(DEFAULT_DEDUP_THRESHOLD),
                   help="comma-separated dedup settings, one memory run each: a threshold "
                   "(the service's rule), or THRESHOLD/K (at most K content words changed) "
                   "or THRESHOLD/any (cosine alone above the threshold: the old rule)")
    p.add_argument("--no-baselines", action="store_true",
                   help="skip plain search and the dedup-off run")
    p.add_argument("--embedder", default="minilm", choices=("minilm", "hash"))
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args(argv)
    embedder = make_embedder(opts.embedder, opts.cache)
    thresholds = [_setting(x) for x in opts.thresholds.split(",")]
    names = [] if opts.no_baselines else ["plain search", "memory, dedup off"]
    names += [f"memory, dedup {_label(t)}" for t in thresholds]
    totals: dict[str, Scores] = {name: Scores() for name in names}
    saves = 0
    supersessions = dict.fromkeys(thresholds, 0)
    seconds = {"save": 0.0, "recall": 0.0}
    for conv in locomo.load(limit=opts.conversations):
        embedder.embed([locomo.memory_text(t, STYLE) for t in conv.turns])
        embedder.embed([q.text for q in conv.questions])
        with tempfile.TemporaryDirectory(prefix="sediment-memory-locomo-") as tmp:
            root = Path(tmp)
            runs: dict[str, Scores] = {}
            if not opts.no_baselines:
                runs["plain search"] = _plain_run(conv, embedder, root / "plain")
                runs["memory, dedup off"] = _memory_run(conv, embedder, 1.0, root / "off")[0]
            sups = []
            for n, t in enumerate(thresholds):
                on, sup, s_save, s_recall = _memory_run(conv, embedder, t[0],
                                                        root / f"t{n}", t[1])
                runs[f"memory, dedup {_label(t)}"] = on
                supersessions[t] += sup
                sups.append(f"{sup} at {_label(t)}")
                seconds["save"] += s_save
                seconds["recall"] += s_recall
        for name, sc in runs.items():
            for k, v in sc.hits.items():
                totals[name].hits[k] = totals[name].hits.get(k, 0) + v
            totals[name].ndcg += sc.ndcg
            totals[name].n += sc.n
        saves += len(conv.turns)
        print(f"{conv.sample_id}: {len(conv.turns)} turns, supersessions {', '.join(sups)}",
              flush=True)
    rows: dict[str, Any] = {name: sc.row() for name, sc in totals.items()}
    print("\n| run | recall@5 | recall@10 |\n|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {row['recall@5']:.3f} | {row['recall@10']:.3f} |")
    runs_n = saves * len(thresholds)
    print(f"\nsaves {saves} per run; supersessions: " + ", ".join(
        f"{n} ({n / max(saves, 1):.1%}) at {_label(t)}" for t, n in supersessions.items())
        + f"; save {seconds['save'] / max(runs_n, 1) * 1e3:.1f} ms per turn; questions "
        f"{next(iter(totals.values())).n}")
    if opts.json:
        opts.json.write_text(json.dumps({"rows": rows, "saves": saves,
                                         "supersessions": {_label(t): n for t, n in
                                                           supersessions.items()}},
                                        indent=2))


if __name__ == "__main__":
    main()

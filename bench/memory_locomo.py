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
from sediment.ops import run_search
from sediment.search import SearchRequest
from sediment.store import LayerSet

STYLE: locomo.MemoryText = "speaker"


def _memory_run(conv: locomo.Conversation, embedder: Embedder, threshold: float,
                root: Path) -> tuple[Scores, int, float, float]:
    (root / "project").mkdir(parents=True)
    store = FileMemoryStore(LayerSet.from_directory(root / "project"), root / "data",
                            profile=embedder.profile.to_dict(), dim=embedder.profile.dim,
                            embedder_metadata=embedder.metadata())
    svc = MemoryService(store, embedder, dedup_threshold=threshold)
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


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.memory_locomo", description=__doc__)
    p.add_argument("--conversations", type=int, default=None, help="only the first N")
    p.add_argument("--threshold", type=float, default=DEFAULT_DEDUP_THRESHOLD)
    p.add_argument("--embedder", default="minilm", choices=("minilm", "hash"))
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args(argv)
    embedder = make_embedder(opts.embedder, opts.cache)
    totals: dict[str, Scores] = {"plain search": Scores(),
                                 "memory, dedup off": Scores(),
                                 f"memory, dedup {opts.threshold:.2f}": Scores()}
    saves = supersessions = 0
    seconds = {"save": 0.0, "recall": 0.0}
    for conv in locomo.load(limit=opts.conversations):
        embedder.embed([locomo.memory_text(t, STYLE) for t in conv.turns])
        embedder.embed([q.text for q in conv.questions])
        with tempfile.TemporaryDirectory(prefix="sediment-memory-locomo-") as tmp:
            root = Path(tmp)
            runs = {"plain search": _plain_run(conv, embedder, root / "plain")}
            off, _, _, _ = _memory_run(conv, embedder, 1.0, root / "off")
            runs["memory, dedup off"] = off
            on, sup, s_save, s_recall = _memory_run(conv, embedder, opts.threshold,
                                                    root / "on")
            runs[f"memory, dedup {opts.threshold:.2f}"] = on
        for name, sc in runs.items():
            for k, v in sc.hits.items():
                totals[name].hits[k] = totals[name].hits.get(k, 0) + v
            totals[name].ndcg += sc.ndcg
            totals[name].n += sc.n
        saves += len(conv.turns)
        supersessions += sup
        seconds["save"] += s_save
        seconds["recall"] += s_recall
        print(f"{conv.sample_id}: {len(conv.turns)} turns, {sup} supersessions", flush=True)
    rows: dict[str, Any] = {name: sc.row() for name, sc in totals.items()}
    print("\n| run | recall@5 | recall@10 |\n|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {row['recall@5']:.3f} | {row['recall@10']:.3f} |")
    print(f"\nsaves {saves}, supersessions {supersessions} "
          f"({supersessions / max(saves, 1):.1%}); save {seconds['save'] / saves * 1e3:.1f} ms "
          f"per turn; questions {totals['plain search'].n}")
    if opts.json:
        opts.json.write_text(json.dumps({"rows": rows, "saves": saves,
                                         "supersessions": supersessions,
                                         "threshold": opts.threshold}, indent=2))


if __name__ == "__main__":
    main()

"""Markdown tables of the quality numbers: one overall, one per group (category or file)."""

from __future__ import annotations

from collections.abc import Mapping

from bench.quality.evaluate import LABELS, ModeResult
from bench.quality.metrics import KS

COLUMNS = [f"recall@{k}" for k in KS] + ["ndcg@10"]


def _row(label: str, row: Mapping[str, float]) -> str:
    cells = " | ".join(f"{row[c]:.3f}" for c in COLUMNS)
    return f"| {label} | {int(row['n'])} | {cells} |"


def tables(title: str, results: Mapping[str, ModeResult]) -> str:
    head = "| mode | questions | " + " | ".join(COLUMNS) + " |"
    rule = "|---|---:|" + "---:|" * len(COLUMNS)
    lines = [f"### {title}", "", head, rule]
    for mode, res in results.items():
        ms = 1e3 * res.seconds / max(res.queries, 1)
        lines.append(_row(f"{LABELS.get(mode, mode)} ({ms:.1f} ms/query)", res.overall.row()))
    groups = sorted({g for r in results.values() for g in r.by_group})
    if len(groups) > 1:
        lines += ["", f"Per group, recall@5 / nDCG@10 ({', '.join(results)}):", "",
                  "| group | questions | " + " | ".join(results) + " |",
                  "|---|---:|" + "---:|" * len(results)]
        for g in groups:
            cells = []
            n = 0
            for res in results.values():
                row = res.by_group[g].row() if g in res.by_group else None
                if row:
                    n = int(row["n"])
                    cells.append(f"{row['recall@5']:.3f} / {row['ndcg@10']:.3f}")
                else:
                    cells.append("-")
            lines.append(f"| {g} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def as_json(results: Mapping[str, ModeResult]) -> dict[str, object]:
    return {mode: {"overall": res.overall.row(),
                   "ms_per_query": 1e3 * res.seconds / max(res.queries, 1),
                   "groups": {g: s.row() for g, s in res.by_group.items()}}
            for mode, res in results.items()}

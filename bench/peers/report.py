"""docs/peers.md (between markers, so the hand-written text around it stays) and the plot."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.peers.data import WORKLOADS
from bench.peers.systems import SYSTEMS

BEGIN = "<!-- peers:begin -->"
END = "<!-- peers:end -->"


def one_line(row: Mapping[str, Any]) -> str:
    if "skipped" in row:
        return f"skipped ({row['skipped']})"
    return (f"build {row['build_s']:.1f} s, p50 {row['p50_ms']:.2f} ms, "
            f"recall@10 {row['recall_at_10']:.3f}")


def _mb(v: Any) -> str:
    return f"{float(v) / 1e6:,.0f}"


def workload(row: Mapping[str, Any]) -> str:
    """The row's workload (rows of runs before workloads existed are the mixture)."""
    return str(row.get("workload", "mixture"))


def _order(w: str) -> int:
    return WORKLOADS.index(w) if w in WORKLOADS else len(WORKLOADS)


def table(results: Mapping[str, Mapping[str, Any]]) -> str:
    head = ("| workload | vectors | system | mode | build / import s | open s | first query ms "
            "| p50 ms | p99 ms | QPS | recall@10 | build peak RSS MB | query peak RSS MB "
            "| disk MB |")
    lines = [head, "|" + "---|" * 3 + "---|" + "---:|" * 10]
    rows = sorted(results.values(), key=lambda r: (_order(workload(r)), r["size"],
                                                   r["mode"] != "exact",
                                                   r.get("p50_ms", 1e12)))
    for r in rows:
        lead = f"| {workload(r)} | {r['size']:,} | {r['system']} | {r['mode']} |"
        if "skipped" in r:
            lines.append(lead + f" {r['skipped']} |" + " |" * 9)
            continue
        lines.append(
            lead + f" {r['build_s']:.1f} | {r['open_s']:.3f} | {1e3 * r['first_query_s']:.1f} |"
            f" {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['qps']:,.0f} |"
            f" {r['recall_at_10']:.3f} | {_mb(r['build_rss'])} | {_mb(r['query_rss'])} |"
            f" {_mb(r['disk_bytes'])} |")
    return "\n".join(lines)


TARGETS = (0.90, 0.95, 0.98, 0.99)
"""Recall@10 levels at which the equal-recall table compares the approximate systems."""


def points(row: Mapping[str, Any]) -> list[tuple[int | None, float, float]]:
    """(search breadth, p50 ms, recall@10) of a row's default run and its sweep."""
    if "skipped" in row:
        return []
    out: list[tuple[int | None, float, float]] = [(None, row["p50_ms"], row["recall_at_10"])]
    out += [(p["effort"], p["p50_ms"], p["recall_at_10"]) for p in row.get("sweep", [])]
    return out


def fastest_at(row: Mapping[str, Any], target: float) -> tuple[float, int | None] | None:
    """The lowest p50 (and its breadth) among a row's runs reaching ``target`` recall."""
    ok = [(ms, ef) for ef, ms, r in points(row) if r >= target]
    return min(ok, key=lambda x: x[0]) if ok else None


def equal_recall(results: Mapping[str, Mapping[str, Any]]) -> str:
    """For each size and recall level: every approximate system's fastest run that
    reaches it."""
    rows = [r for r in results.values() if r["mode"] == "approximate" and r.get("sweep")]
    if not rows:
        return ""
    names = sorted({str(r["system"]) for r in rows})
    lines = ["| workload | vectors | recall@10 at least | " + " | ".join(names) + " | fastest |",
             "|---|---:|---:|" + "---:|" * len(names) + "---|"]
    groups = sorted({(workload(r), int(r["size"])) for r in rows},
                    key=lambda g: (_order(g[0]), g[1]))
    for w, n in groups:
        by_name = {str(r["system"]): r for r in rows if r["size"] == n and workload(r) == w}
        for target in TARGETS:
            cells: list[str] = []
            best: tuple[float, str] | None = None
            for name in names:
                got = fastest_at(by_name[name], target) if name in by_name else None
                if got is None:
                    cells.append("-" if name not in by_name else "not reached")
                    continue
                ms, ef = got
                label = SYSTEMS[name].breadth if name in SYSTEMS else "ef"
                cells.append(f"{ms:.2f} ms ({label} {ef if ef is not None else 'default'})")
                if best is None or ms < best[0]:
                    best = (ms, name)
            lead = best[1] if best else "-"
            lines.append(f"| {w} | {n:,} | {target:.2f} | " + " | ".join(cells)
                         + f" | {lead} |")
    return "\n".join(lines)


def machine() -> str:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import importlib.metadata as md

    def v(dist: str) -> str:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return "-"

    libs = ", ".join(f"{d} {v(d)}" for d in ("numpy", "usearch", "faiss-cpu", "lancedb",
                                              "chromadb", "sqlite-vec", "apsw"))
    return (f"{cpu}, {os.cpu_count()} cores, load average at the end "
            f"{os.getloadavg()[0]:.1f}; {libs}")


def plot(results: Mapping[str, Mapping[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sorted({(workload(r), int(r["size"])) for r in results.values()},
                    key=lambda g: (_order(g[0]), g[1]))
    fig, axes = plt.subplots(1, len(groups), figsize=(6 * len(groups), 4.5), squeeze=False)
    for ax, (w, n) in zip(axes[0], groups, strict=True):
        rows = [r for r in results.values()
                if r["size"] == n and workload(r) == w and "skipped" not in r]
        for r in rows:
            marker = "o" if r["mode"] == "exact" else "^"
            dots = ax.scatter(r["p50_ms"], r["recall_at_10"], marker=marker, s=50)
            ax.annotate(str(r["system"]), (r["p50_ms"], r["recall_at_10"]), fontsize=8,
                        xytext=(4, 3), textcoords="offset points")
            sweep = sorted(r.get("sweep", []), key=lambda p: p["effort"])
            if sweep:
                ax.plot([p["p50_ms"] for p in sweep], [p["recall_at_10"] for p in sweep],
                        marker=".", color=dots.get_facecolor()[0], alpha=0.7, lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("p50 latency, ms (log scale)")
        ax.set_ylabel("recall@10 against exact search")
        ax.set_title(f"{w}: {n:,} vectors x 384 dims, top-10\n(o exact, ^ approximate "
                     "default; lines: breadth sweep)", fontsize=10)
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def write(results: Mapping[str, Mapping[str, Any]], out: Path, command: str) -> None:
    png = out.with_suffix(".png")
    plot(results, png)
    sweep = equal_recall(results)
    parts = [BEGIN, "", f"Command: `{command}`. Machine: {machine()}.", "", table(results), ""]
    if sweep:
        parts += ["Equal recall: the fastest p50 of each approximate system over its sweep of "
                  "search breadths (HNSW ef; nprobe for ivf-previous) that reaches each "
                  "recall@10.",
                  "", sweep, ""]
    block = "\n".join([*parts, f"![latency against recall]({png.name})", "", END])
    text = out.read_text() if out.exists() else f"# Peers\n\n{BEGIN}\n{END}\n"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    out.write_text(text)

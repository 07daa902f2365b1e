"""docs/peers.md (between markers, so the hand-written text around it stays) and the plot."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

BEGIN = "<!-- peers:begin -->"
END = "<!-- peers:end -->"


def one_line(row: Mapping[str, Any]) -> str:
    if "skipped" in row:
        return f"skipped ({row['skipped']})"
    return (f"build {row['build_s']:.1f} s, p50 {row['p50_ms']:.2f} ms, "
            f"recall@10 {row['recall_at_10']:.3f}")


def _mb(v: Any) -> str:
    return f"{float(v) / 1e6:,.0f}"


def table(results: Mapping[str, Mapping[str, Any]]) -> str:
    head = ("| vectors | system | mode | build / import s | open s | first query ms | p50 ms "
            "| p99 ms | QPS | recall@10 | build peak RSS MB | query peak RSS MB | disk MB |")
    lines = [head, "|" + "---|" * 2 + "---|" + "---:|" * 10]
    rows = sorted(results.values(), key=lambda r: (r["size"], r["mode"] != "exact",
                                                   r.get("p50_ms", 1e12)))
    for r in rows:
        lead = f"| {r['size']:,} | {r['system']} | {r['mode']} |"
        if "skipped" in r:
            lines.append(lead + f" {r['skipped']} |" + " |" * 9)
            continue
        lines.append(
            lead + f" {r['build_s']:.1f} | {r['open_s']:.3f} | {1e3 * r['first_query_s']:.1f} |"
            f" {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['qps']:,.0f} |"
            f" {r['recall_at_10']:.3f} | {_mb(r['build_rss'])} | {_mb(r['query_rss'])} |"
            f" {_mb(r['disk_bytes'])} |")
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

    sizes = sorted({int(r["size"]) for r in results.values()})
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4.5), squeeze=False)
    for ax, n in zip(axes[0], sizes, strict=True):
        rows = [r for r in results.values() if r["size"] == n and "skipped" not in r]
        for r in rows:
            marker = "o" if r["mode"] == "exact" else "^"
            ax.scatter(r["p50_ms"], r["recall_at_10"], marker=marker, s=50)
            ax.annotate(str(r["system"]), (r["p50_ms"], r["recall_at_10"]), fontsize=8,
                        xytext=(4, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_xlabel("p50 latency, ms (log scale)")
        ax.set_ylabel("recall@10 against exact search")
        ax.set_title(f"{n:,} vectors x 384 dims, top-10 (o exact, ^ HNSW)")
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def write(results: Mapping[str, Mapping[str, Any]], out: Path, command: str) -> None:
    png = out.with_suffix(".png")
    plot(results, png)
    block = "\n".join([BEGIN, "", f"Command: `{command}`. Machine: {machine()}.", "",
                       table(results), "", f"![latency against recall]({png.name})", "", END])
    text = out.read_text() if out.exists() else f"# Peers\n\n{BEGIN}\n{END}\n"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    out.write_text(text)

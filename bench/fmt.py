"""Number formatting and Markdown tables for the report."""

from __future__ import annotations

from collections.abc import Sequence


def ms(seconds: float) -> str:
    v = seconds * 1e3
    if v < 1:
        return f"{v:.3f}"
    if v < 10:
        return f"{v:.2f}"
    if v < 100:
        return f"{v:.1f}"
    return f"{v:,.0f}"


def secs(seconds: float) -> str:
    return f"{seconds:.2f}" if seconds < 100 else f"{seconds:,.0f}"


def mb(nbytes: float) -> str:
    """Megabytes (10^6), as the GB/s figures are decimal too."""
    v = nbytes / 1e6
    return f"{v:,.1f}" if v < 1000 else f"{v:,.0f}"


def rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def gbps(value: float) -> str:
    return f"{value:.2f}"


def count(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1_000 and n % 1_000 == 0:
        return f"{n // 1_000}k"
    return f"{n:,}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]],
          align: Sequence[str] | None = None) -> str:
    """A GitHub Markdown table; ``align`` holds "l" or "r" per column (default: first left,
    others right)."""
    al = list(align) if align else ["l"] + ["r"] * (len(headers) - 1)
    rule = ["---:" if a == "r" else ":---" for a in al]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)

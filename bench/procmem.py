"""This process's resident memory from /proc/self (Linux), and resetting its peak."""

from __future__ import annotations

from pathlib import Path


def status() -> dict[str, int]:
    """VmRSS, VmHWM (peak), RssAnon and RssFile in bytes; empty where /proc is missing."""
    out: dict[str, int] = {}
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) * 1024
    return out


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (``echo 5 > /proc/self/clear_refs``); False if refused."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True

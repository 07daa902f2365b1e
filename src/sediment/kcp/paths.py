"""Unit paths: relative, forward slashes, never outside the manifest's directory (KCP 4.3, 12).

An absolute path, a drive letter, a URL, or ``..`` that climbs above the manifest's
directory is refused before validation (the conformance suite calls these parse errors);
``..`` that stays inside is normalised away. Backslashes count as separators for that check,
so ``..\\..\\etc`` cannot slip through, and are then reported, since KCP requires ``/``.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from sediment.kcp.errors import ManifestError

__all__ = ["inside", "normalize_path"]

_DRIVE_OR_URL = re.compile(r"[A-Za-z]:|[A-Za-z][A-Za-z0-9+.\-]*://")


def normalize_path(raw: str, *, what: str, source: str = "") -> str:
    """The posix-normalised relative form of ``raw``; raise if it is absolute or escapes."""
    slashed = raw.replace("\\", "/")
    if slashed.startswith("/") or _DRIVE_OR_URL.match(slashed):
        raise ManifestError(f"{what}: {raw!r} must be a relative path (KCP 4.3, 12)",
                            rule="path.absolute", source=source)
    if "\0" in raw:
        raise ManifestError(f"{what}: the path contains a NUL character", rule="path.absolute",
                            source=source)
    norm = posixpath.normpath(slashed)
    if norm == ".." or norm.startswith("../"):
        raise ManifestError(f"{what}: {raw!r} escapes the manifest's directory (KCP 12)",
                            rule="path.escape", source=source)
    return norm


def inside(base: Path, rel: str) -> Path | None:
    """``base / rel`` resolved, or None when a symlink takes it outside ``base``."""
    target = (base / rel).resolve()
    return target if target.is_relative_to(base.resolve()) else None

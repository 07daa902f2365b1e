"""Find the KCP manifests of a project tree (KCP 1).

- ``knowledge.yaml`` at the root (1.1);
- a ``knowledge: /path`` line in the header of the root ``llms.txt`` (before its first
  ``##`` heading, 1.2), which replaces the root location when it names an existing file
  (a root ``knowledge.yaml`` it shadows is reported, not read);
- every ``knowledge.yaml`` in a subdirectory (1.3), each independent of the others.

The walk never enters ``.git``, hidden directories or the usual dependency and build
directories, does not follow directory symlinks, and skips manifests whose real path is
outside the root. Paths are posix, relative to the root, in sorted order (the root one
first), so the same tree always gives the same list.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sediment.errors import NotFoundError
from sediment.ingest.discover import walk_entries

__all__ = ["MANIFEST_NAME", "SKIPPED_DIRS", "Discovery", "FoundManifest", "find_manifests",
           "llms_txt_manifest"]

MANIFEST_NAME = "knowledge.yaml"
SKIPPED_DIRS = frozenset({"node_modules", "venv", "__pycache__", "dist", "build", "target",
                          "site-packages"})
_KNOWLEDGE_LINE = re.compile(r">?\s*knowledge:\s*(\S+)\s*$")
_LLMS_HEADER_LINES = 200


@dataclass(frozen=True, slots=True)
class FoundManifest:
    path: str
    via: Literal["root", "llms.txt", "subdirectory"]

    @property
    def directory(self) -> str:
        """The manifest's directory relative to the root ("" for the root itself)."""
        head, _, _ = self.path.rpartition("/")
        return head


@dataclass(frozen=True, slots=True)
class Discovery:
    manifests: list[FoundManifest]
    warnings: list[str]


def llms_txt_manifest(text: str) -> str | None:
    """The value of the ``knowledge:`` line in the header of an llms.txt, if any."""
    for n, line in enumerate(text.splitlines()):
        if line.startswith("## ") or line.strip() == "##" or n >= _LLMS_HEADER_LINES:
            return None
        match = _KNOWLEDGE_LINE.fullmatch(line.strip())
        if match:
            return match.group(1)
    return None


def find_manifests(root: Path) -> Discovery:
    """Every manifest under ``root``; ``NotFoundError`` if ``root`` is not a directory."""
    if not root.is_dir():
        raise NotFoundError(f"{root}: not a directory")
    base = root.resolve()
    warnings: list[str] = []
    found: list[FoundManifest] = []
    declared = _from_llms_txt(base, warnings)
    if declared is not None:
        found.append(FoundManifest(declared, "llms.txt"))
        if declared != MANIFEST_NAME and (base / MANIFEST_NAME).is_file():
            warnings.append(f"{MANIFEST_NAME}: not read; llms.txt declares /{declared} "
                            "instead (KCP 1.2)")
    elif _regular_inside(base, MANIFEST_NAME):
        found.append(FoundManifest(MANIFEST_NAME, "root"))
    taken = {m.path for m in found}
    for rel in _walk(base, warnings):
        if rel not in taken and rel != MANIFEST_NAME:
            found.append(FoundManifest(rel, "subdirectory"))
    return Discovery(found, warnings)


def _from_llms_txt(base: Path, warnings: list[str]) -> str | None:
    llms = base / "llms.txt"
    if not llms.is_file():
        return None
    try:
        with llms.open("rb") as fh:
            head = fh.read(64 * 1024).decode("utf-8", errors="replace")
    except OSError as exc:
        warnings.append(f"llms.txt: unreadable: {exc.strerror or exc}")
        return None
    value = llms_txt_manifest(head)
    if value is None:
        return None
    if "://" in value:
        warnings.append(f"llms.txt: knowledge: {value} is remote; only local manifests are "
                        "discovered")
        return None
    if not value.startswith("/"):
        warnings.append(f"llms.txt: knowledge: {value} should begin with '/' (KCP 1.2); read "
                        "it relative to the root")
    rel = os.path.normpath(value.lstrip("/")).replace(os.sep, "/")
    if rel == ".." or rel.startswith("../"):
        warnings.append(f"llms.txt: knowledge: {value} is outside the root; ignored")
        return None
    if not _regular_inside(base, rel):
        warnings.append(f"llms.txt: knowledge: {value} does not exist (or leaves the root); "
                        "ignored")
        return None
    return rel


def _regular_inside(base: Path, rel: str) -> bool:
    target = base / rel
    return target.is_file() and target.resolve().is_relative_to(base)


def _walk(base: Path, warnings: list[str]) -> list[str]:
    out: list[str] = []
    for rel, entry in walk_entries(
            base, lambda name, _: not name.startswith(".") and name not in SKIPPED_DIRS,
            lambda d, exc: warnings.append(f"{d}/: unreadable: {exc.strerror or exc}")):
        if entry.name == MANIFEST_NAME and "/" in rel:
            if _regular_inside(base, rel):
                out.append(rel)
            else:
                warnings.append(f"{rel}: skipped; it is not a regular file inside the root")
    return sorted(out)

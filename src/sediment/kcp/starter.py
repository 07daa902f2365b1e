"""A starter knowledge.yaml from a repository's Markdown files (``sediment kcp init``).

It writes what can be known from the files (ids, paths) and leaves the rest to a person:
every ``intent`` is ``""`` under a TODO comment, because KCP 4.4 says a tool that cannot
write a useful intent should not fake one with the file name. The first heading of each
file is shown in that comment as a hint. ``scope`` is ``global`` for the root README and
``project`` otherwise, ``audience`` is ``[human, agent]``: guesses the header asks a person
to check. The result parses, and validates with one error per empty intent until they
are written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from sediment.errors import ValidationError
from sediment.ingest.discover import discover
from sediment.kcp.discover import MANIFEST_NAME
from sediment.kcp.validate import TARGET_VERSION
from sediment.store.atomic import atomic_write

__all__ = ["MAX_STARTER_UNITS", "Starter", "build_starter", "write_starter"]

MAX_STARTER_UNITS = 500
_SUFFIXES = (".md", ".markdown", ".mdx")
_NOT_ID = re.compile(r"[^a-z0-9.\-]+")
_HEADING = re.compile(r"#{1,6}\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True, slots=True)
class Starter:
    text: str
    paths: list[str]
    truncated: int = 0


def build_starter(root: Path, *, project: str | None = None, today: date | None = None
                  ) -> Starter:
    paths = _markdown_files(root)
    truncated = max(0, len(paths) - MAX_STARTER_UNITS)
    paths = paths[:MAX_STARTER_UNITS]
    name = project or root.resolve().name or "project"
    lines = [
        "# knowledge.yaml: a Knowledge Context Protocol manifest",
        "# (https://github.com/cantara/knowledge-context-protocol), started by",
        "# `sediment kcp init`. Each intent is left empty for a person to write: one sentence",
        "# saying which question the file answers. Check scope (global | project | module)",
        "# and audience, add triggers and depends_on where they help, then run",
        "# `sediment kcp validate`.",
        f'kcp_version: "{TARGET_VERSION}"',
        f"project: {_quote(name)}",
        'version: "0.1.0"',
        f'updated: "{(today or date.today()).isoformat()}"',
        "",
        "units:",
    ]
    taken: set[str] = set()
    for path in paths:
        uid = _unit_id(path, taken)
        heading = _first_heading(root / path)
        hint = f" (first heading: {heading})" if heading else ""
        lines += [
            f"  - id: {uid}",
            f"    path: {_quote(path)}",
            f"    # TODO: the question this file answers, as one sentence{hint}",
            '    intent: ""',
            f"    scope: {'global' if path.lower() == 'readme.md' else 'project'}",
            "    audience: [human, agent]",
        ]
    if not paths:
        lines[-1] = "units: []  # TODO: no Markdown files were found; declare units here"
    return Starter("\n".join(lines) + "\n", paths, truncated)


def write_starter(root: Path, *, force: bool = False, project: str | None = None) -> Path:
    """Write ``root/knowledge.yaml``; an existing one is kept unless ``force``."""
    target = root / MANIFEST_NAME
    if not root.is_dir():
        raise ValidationError(f"{root}: not a directory")
    if target.exists() and not force:
        raise ValidationError(f"{target} already exists; pass --force to overwrite it")
    starter = build_starter(root, project=project)
    atomic_write(target, starter.text.encode("utf-8"))
    return target


def _markdown_files(root: Path) -> list[str]:
    """Markdown files as compile would find them (same walk, junk directories skipped),
    README.md first, then shallow before deep."""
    out = [p.as_posix() for p in discover(root, ["**"])
           if p.name.lower().endswith(_SUFFIXES)]
    return sorted(out, key=lambda p: (p.lower() != "readme.md", p.count("/"), p))


def _unit_id(path: str, taken: set[str]) -> str:
    stem = path.rsplit(".", 1)[0].lower().replace("/", "-")
    base = _NOT_ID.sub("-", stem).strip("-.") or "unit"
    uid, n = base, 1
    while uid in taken:
        n += 1
        uid = f"{base}-{n}"
    taken.add(uid)
    return uid


def _first_heading(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            head = fh.read(16 * 1024).decode("utf-8", errors="replace")
    except OSError:
        return None
    for line in head.splitlines():
        match = _HEADING.fullmatch(line.strip())
        if match:
            text = "".join(c for c in match.group(1) if c.isprintable())
            return text[:80] or None
    return None


def _quote(text: str) -> str:
    """A YAML double-quoted scalar; anything YAML cannot carry raw is escaped."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= code <= 0x7E or (code >= 0xA0 and ch.isprintable()
                                      and not 0xD800 <= code <= 0xDFFF):
            out.append(ch)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)

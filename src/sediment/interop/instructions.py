"""Agent instruction files: ``CLAUDE.md`` and ``AGENTS.md`` (in any directory, with
``@path`` includes), Cursor's ``.cursor/rules/*.mdc`` (front matter ``description``,
``globs``, ``alwaysApply``), ``.github/copilot-instructions.md`` and Cline's
``memory-bank/`` folder.

Each list item, paragraph or code block becomes a memory (docs/import-export.md says why
memories, not chunks), its provenance the ``path:line`` it starts on; the file's path,
the headings above it, the text as written and the file's front matter are kept in the
origin, so an export writes the files back where they were.

``@path`` includes (Claude Code's syntax, read for ``AGENTS.md`` too) are followed
relative to the file that names them, at most ``MAX_INCLUDE_DEPTH`` deep, each file
once; an include outside the imported root (``~/...``, ``../..``, a symbolic link out) or
one that would close a cycle is not read, and the report says so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from sediment.ingest.frontmatter import parse_front_matter
from sediment.interop.blocks import Block, blocks, render
from sediment.interop.model import Item, Reading, context_name, fail, read_text, walk
from sediment.memory import Memory

MAX_INCLUDE_DEPTH = 5
_INCLUDE = re.compile(r"(?:(?<=\s)|(?<=^)|(?<=\())@(~?[A-Za-z0-9_./-]*[A-Za-z0-9_/-])")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


@dataclass(frozen=True, slots=True)
class Kind:
    """One instruction format: which files it reads and writes, and their category."""

    name: str
    find: Callable[[Path], list[Path]]
    default_path: str
    includes: bool
    category: Callable[[str, dict[str, str]], str]
    front_matter: str | None = None
    """What a new file of this kind starts with (Cursor rules need front matter)."""


def _named(*names: str, hidden: tuple[str, ...] = ()) -> Callable[[Path], list[Path]]:
    def find(root: Path) -> list[Path]:
        return list(walk(root, lambda rel: PurePosixPath(rel).name in names, hidden=hidden))
    return find


def _cursor(root: Path) -> list[Path]:
    return list(walk(root, lambda rel: rel.endswith(".mdc") and
                     (rel.startswith(".cursor/rules/") or "/.cursor/rules/" in rel),
                     hidden=(".cursor",)))


def _copilot(root: Path) -> list[Path]:
    p = root / ".github" / "copilot-instructions.md"
    return [p] if p.is_file() else []


def _cline(root: Path) -> list[Path]:
    bank = root if root.name == "memory-bank" else root / "memory-bank"
    if not bank.is_dir():
        return []
    return sorted(p for p in bank.iterdir() if p.suffix == ".md" and p.is_file())


def _rule_category(_: str, fields: dict[str, str]) -> str:
    always = fields.get("alwaysApply", "").strip().lower() == "true"
    return "instruction" if always or not fields.get("globs", "").strip() else "convention"


def _bank_category(rel: str, _: dict[str, str]) -> str:
    return "pattern" if PurePosixPath(rel).stem == "systemPatterns" else "fact"


KINDS = {k.name: k for k in (
    Kind("claude", _named("CLAUDE.md", "CLAUDE.local.md", hidden=(".claude",)), "CLAUDE.md",
         True, lambda _r, _f: "instruction"),
    Kind("agents-md", _named("AGENTS.md"), "AGENTS.md", True, lambda _r, _f: "instruction"),
    Kind("cursor", _cursor, ".cursor/rules/sediment.mdc", False, _rule_category,
         "description: Memories exported from Sediment\nglobs:\nalwaysApply: true"),
    Kind("copilot", _copilot, ".github/copilot-instructions.md", False,
         lambda _r, _f: "instruction"),
    Kind("cline", _cline, "memory-bank/sediment.md", False, _bank_category),
)}


def front_matter(lines: list[str]) -> tuple[str | None, dict[str, str], int]:
    """(the front matter as written, its flat ``key: value`` fields, the first body
    line's index); a file without one gives (None, {}, 0). Read as ``compile`` reads it
    (:func:`sediment.ingest.frontmatter.parse_front_matter`)."""
    found = parse_front_matter([ln.rstrip("\r") for ln in lines])
    if found is None:
        return None, {}, 0
    raw = [ln.rstrip("\r") for ln in lines[1:found.body_start - 1]]
    return "\n".join(raw), found.fields, found.body_start


def _includes(block: Block) -> list[str]:
    if block.text.lstrip().startswith(("```", "~~~")):
        return []
    return [m.group(1).rstrip(".") for m in _INCLUDE.finditer(_CODE_SPAN.sub("", block.text))]


class _Reader:
    def __init__(self, kind: Kind, root: Path, reading: Reading) -> None:
        self.kind = kind
        self.root = root
        self.real_root = root.resolve()
        self.reading = reading
        self.done: set[Path] = set()

    def rel(self, path: Path) -> str:
        return path.resolve().relative_to(self.real_root).as_posix()

    def file(self, path: Path, depth: int, chain: tuple[Path, ...],
             included_from: str | None) -> Iterator[Item]:
        real = path.resolve()
        self.done.add(real)
        rel = self.rel(path)
        lines = read_text(path, rel).split("\n")
        raw, fields, body = front_matter(lines)
        category = self.kind.category(rel, fields)
        first = True
        for b in blocks(lines, body):
            origin: dict[str, Any] = {"format": self.kind.name, "part": "instruction",
                                      "path": rel, "line": b.line, "text": b.text,
                                      "headings": list(b.headings)}
            if first and raw is not None:
                origin["front_matter"] = raw
            if included_from:
                origin["included_from"] = included_from
            first = False
            yield Item(b.content, category, f"{rel}:{b.line}", origin,
                       context=context_name(rel))
            if self.kind.includes:
                for target in _includes(b):
                    yield from self.include(path, target, f"{rel}:{b.line}", depth,
                                            (*chain, real))

    def include(self, path: Path, target: str, where: str, depth: int,
                chain: tuple[Path, ...]) -> Iterator[Item]:
        looks_like_path = "/" in target or "." in target
        if target.startswith("~"):
            self.reading.notes.append(f"{where}: @{target} is outside {self.root}; not read")
            return
        full = (path.parent / target) if not target.startswith("/") else Path(target)
        real = Path(os.path.realpath(full))
        if not real.is_relative_to(self.real_root):
            if looks_like_path:
                self.reading.notes.append(f"{where}: @{target} is outside {self.root}; "
                                          "not read")
            return
        if not real.is_file():
            if looks_like_path:
                self.reading.notes.append(f"{where}: @{target} does not exist; not read")
            return
        if real in chain:
            self.reading.notes.append(f"{where}: @{target} includes a file that includes "
                                      "it (a cycle); read once")
            return
        if real in self.done:
            return
        if depth >= MAX_INCLUDE_DEPTH:
            self.reading.notes.append(f"{where}: @{target} is more than "
                                      f"{MAX_INCLUDE_DEPTH} includes deep; not read")
            return
        yield from self.file(real, depth + 1, chain, where)


def reader(kind_name: str) -> Callable[[Path, Path, Reading], Iterator[Item]]:
    kind = KINDS[kind_name]

    def read(path: Path, root: Path, reading: Reading) -> Iterator[Item]:
        base = path if path.is_dir() else path.parent
        files = kind.find(path) if path.is_dir() else [path]
        if not files:
            raise fail(str(path), f"no {kind.name} instruction files here (looked for "
                                  f"{kind.default_path})")
        r = _Reader(kind, base, reading)
        for f in files:
            real = f.resolve()
            if not real.is_relative_to(r.real_root):
                reading.notes.append(f"{f.relative_to(base).as_posix()} links outside "
                                     f"{base}; not read")
            elif real not in r.done:
                yield from r.file(f, 0, (), None)

    return read


def _safe(rel: object) -> str | None:
    if not isinstance(rel, str) or not rel or "\\" in rel or "\x00" in rel:
        return None
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or ".git" in p.parts:
        return None
    return p.as_posix()


_TITLES = {"preference": "Preferences", "pattern": "Patterns", "correction": "Corrections",
           "fact": "Facts", "instruction": "Instructions", "convention": "Conventions"}


def writer(kind_name: str) -> Callable[[Iterable[Memory]], dict[str, bytes]]:
    kind = KINDS[kind_name]

    def write(memories: Iterable[Memory]) -> dict[str, bytes]:
        files: dict[str, list[tuple[tuple[int, str, int], tuple[str, ...], str]]] = {}
        fronts: dict[str, str] = {}
        for i, m in enumerate(memories):
            o = m.origin or {}
            path = _safe(o.get("path")) if o.get("format") == kind.name else None
            if path is not None and isinstance(o.get("text"), str):
                heads = tuple(h for h in o.get("headings") or () if isinstance(h, str))
                line = o.get("line")
                at = line if isinstance(line, int) and not isinstance(line, bool) else 0
                files.setdefault(path, []).append(((0, "", at), heads, str(o["text"])))
                if isinstance(o.get("front_matter"), str):
                    fronts[path] = str(o["front_matter"])
                continue
            lines = m.content.split("\n")
            text = "\n".join([f"- {lines[0]}", *(f"  {ln}" if ln else ln
                                                 for ln in lines[1:])])
            heads = (f"## {_TITLES.get(m.category, m.category)}",)
            files.setdefault(kind.default_path, []).append(((1, m.category, i), heads, text))
        out: dict[str, bytes] = {}
        for path, rows in files.items():
            rows.sort(key=lambda r: r[0])
            body = render([(h, t) for _, h, t in rows])
            fm = fronts.get(path, kind.front_matter if path == kind.default_path else None)
            head = f"---\n{fm}\n---\n\n" if fm is not None else ""
            out[path] = (head + body).encode("utf-8")
        return out

    return write

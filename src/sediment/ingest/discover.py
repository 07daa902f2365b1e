"""Find the source files a compile reads: include globs minus excludes, under one root.

Rules, so the same tree gives the same list on every machine:

- Paths are matched and returned relative to ``root`` as posix paths, sorted by their posix
  string. Only regular files are returned; FIFOs, sockets and devices are skipped.
- See ``sediment.ingest.patterns`` for the glob syntax. Include globs select files, so
  ``docs`` selects nothing and ``docs/**`` a whole tree. An exclude glob that matches a
  directory (``docs/drafts``, ``**/drafts``, ``docs/*``) excludes everything beneath it,
  as in ``.gitignore``, and the walk does not enter it.
- ``.git`` is never entered. Unless ``default_excludes`` is false, neither are the
  directories in ``DEFAULT_EXCLUDED_DIRS`` (dependencies, virtualenvs, caches, build
  output) at any depth, except one an include glob names as a path segment
  (``build/**/*.md`` enters ``build``). Hidden directories are entered only when some
  include glob has a segment starting with ``.``; other globs could not match inside them.
- Symlinks are resolved. One whose target is outside the root, or missing, is skipped.
  Symlinked directories are not followed (that would read files twice, or loop forever).
  A symlinked file inside the root is kept unless another kept path is the same file (a
  ``CLAUDE.md`` linked to ``AGENTS.md`` is read once); of such duplicates the regular file
  wins, else the first in sorted order.
- Everything skipped that the globs would otherwise have kept, and every directory that
  could not be listed, is passed to ``on_skip``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from sediment.errors import NotFoundError, ValidationError
from sediment.ingest.model import Skipped
from sediment.ingest.patterns import Matcher, compile_patterns, literal_segments, normalize_patterns

__all__ = ["ALWAYS_EXCLUDED_DIRS", "DEFAULT_EXCLUDED_DIRS", "discover", "selector"]

ALWAYS_EXCLUDED_DIRS = frozenset({".git"})
DEFAULT_EXCLUDED_DIRS = frozenset({
    "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", ".ruff_cache",
    ".pytest_cache", "dist", "build",
})

OnSkip = Callable[[Skipped], None]


class _Found(NamedTuple):
    real: str
    link: bool


@dataclass(frozen=True, slots=True)
class _Rules:
    include: Matcher
    exclude: Matcher | None
    skip_dirs: frozenset[str]
    enter_hidden: bool

    def wanted(self, rel: str) -> bool:
        return self.include.match(rel) and not (self.exclude and self.exclude.match(rel))

    def enters(self, name: str, rel: str) -> bool:
        if name in self.skip_dirs or (name.startswith(".") and not self.enter_hidden):
            return False
        return not (self.exclude and self.exclude.match(rel + "/"))


def discover(
    root: Path | str,
    include: Sequence[str],
    exclude: Sequence[str] = (),
    *,
    default_excludes: bool = True,
    on_skip: OnSkip | None = None,
) -> list[PurePosixPath]:
    """Relative paths of the regular files under ``root`` that the globs select.

    Raises ``NotFoundError`` when ``root`` is not a directory and ``ValidationError`` for
    an empty include list or a bad pattern.
    """
    rules = _rules(include, exclude, default_excludes)
    base = _real_root(Path(root))
    report = on_skip or (lambda _: None)
    found = _walk(base, rules, report)
    return [PurePosixPath(rel) for rel in sorted(_dedupe(found, report))]


def selector(
    include: Sequence[str], exclude: Sequence[str] = (), *, default_excludes: bool = True,
) -> Callable[[str], bool]:
    """Whether ``discover`` would keep a path by its name alone: the same globs, skipped
    and hidden directories, and directory excludes, for one relative posix path (the
    file itself is not looked at). Shows people only the files a compile reads."""
    rules = _rules(include, exclude, default_excludes)

    def selects(rel: str) -> bool:
        parts = rel.split("/")
        if any(p in ("", ".", "..") for p in parts):
            return False
        for i in range(1, len(parts)):
            if not rules.enters(parts[i - 1], "/".join(parts[:i])):
                return False
        return rules.wanted(rel)

    return selects


def _rules(include: Sequence[str], exclude: Sequence[str], default_excludes: bool) -> _Rules:
    includes = normalize_patterns(include, "include")
    if not includes:
        raise ValidationError("include: at least one glob is required")
    excludes = normalize_patterns(exclude, "exclude")
    named = literal_segments(includes, "include")
    skip_dirs = ALWAYS_EXCLUDED_DIRS
    if default_excludes:
        skip_dirs |= DEFAULT_EXCLUDED_DIRS - named
    return _Rules(
        include=compile_patterns(includes),
        exclude=compile_patterns(excludes) if excludes else None,
        skip_dirs=skip_dirs,
        enter_hidden=any(s.startswith(".") for s in named),
    )


def _real_root(root: Path) -> Path:
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise NotFoundError(f"root {str(root)!r} {what}")
    return root.resolve()


def _walk(base: Path, rules: _Rules, report: OnSkip) -> dict[str, _Found]:
    """Map each kept relative path to its real path (to find duplicates).

    Directory symlinks are never followed, so a walked path under the resolved root is
    already real. Entries are sorted so ``on_skip`` hears of them in a stable order.
    """
    found: dict[str, _Found] = {}
    for rel, entry in walk_entries(base, rules.enters, lambda d, exc: report(
            Skipped(f"{d}/", f"unreadable directory: {exc.strerror or exc}"))):
        if entry.is_symlink():
            _symlink(base, entry, rel, rules, found, report)
        elif rules.wanted(rel):
            if entry.is_file(follow_symlinks=False):
                found[rel] = _Found(entry.path, link=False)
            else:
                report(Skipped(rel, "not a regular file"))
    return found


def walk_entries(base: Path, enters: Callable[[str, str], bool],
                 unreadable: Callable[[str, OSError], None]
                 ) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(relative posix path, entry) of everything under ``base`` but directories, each
    directory's entries in name order. A directory is entered when ``enters(name, rel)``
    says so, never through a symlink; one that cannot be listed goes to
    ``unreadable(rel or ".", error)``. Compile's discovery and KCP's share this walk."""
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        try:
            with os.scandir(base / rel_dir) as it:
                entries = sorted(it, key=lambda entry: entry.name)
        except OSError as exc:
            unreadable(rel_dir or ".", exc)
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if not entry.is_dir(follow_symlinks=False):
                yield rel, entry
            elif enters(entry.name, rel):
                pending.append(rel)


def _symlink(
    base: Path, entry: os.DirEntry[str], rel: str, rules: _Rules, found: dict[str, _Found],
    report: OnSkip,
) -> None:
    target = os.path.realpath(entry.path)
    is_dir = os.path.isdir(target)
    if not (rules.enters(entry.name, rel) if is_dir else rules.wanted(rel)):
        return
    shown = f"{rel}/" if is_dir else rel
    if not Path(target).is_relative_to(base):
        report(Skipped(shown, f"symlink resolves outside the root (to {target})"))
    elif is_dir:
        report(Skipped(shown, "symlink to a directory; symlinked directories are not followed"))
    elif not os.path.exists(target):
        report(Skipped(rel, "broken symlink"))
    elif not os.path.isfile(target):
        report(Skipped(rel, "symlink to something that is not a regular file"))
    else:
        found[rel] = _Found(target, link=True)


def _dedupe(found: dict[str, _Found], report: OnSkip) -> list[str]:
    by_target: dict[str, list[str]] = {}
    for rel in sorted(found):
        by_target.setdefault(found[rel].real, []).append(rel)
    kept: list[str] = []
    for rels in by_target.values():
        first = next((r for r in rels if not found[r].link), rels[0])
        kept.append(first)
        for rel in rels:
            if rel != first:
                report(Skipped(rel, f"same file as {first} (symlink)"))
    return kept

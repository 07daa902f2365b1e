"""Glob patterns as users write them: validated, normalised and compiled once.

Patterns are relative to the compile root and use ``/`` on every platform (a backslash
escapes, as in any glob). ``**`` matches any number of directories, including none, and
``{a,b}`` expands braces. ``*``, ``?`` and ``**`` never match a name that starts with a
dot: hidden files and directories are matched only by a pattern that names them (``.*``,
``.github/**``). A leading ``./`` is dropped. Matching is case-sensitive everywhere so a
compile gives the same files on every machine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import bracex
from wcmatch import glob

from sediment.errors import ValidationError

__all__ = ["GLOB_FLAGS", "Matcher", "compile_patterns", "literal_segments", "normalize_patterns"]

GLOB_FLAGS = glob.GLOBSTAR | glob.BRACE | glob.FORCEUNIX
EXPANSION_LIMIT = 1000
"""Most patterns one glob may expand to through braces, as in wcmatch."""

Matcher = glob.WcMatcher[str]

_ESCAPE = re.compile(r"\\(.)")
_DRIVE = re.compile(r"[A-Za-z]:")


def normalize_patterns(patterns: Sequence[str] | str, role: str) -> list[str]:
    """Check every pattern and return them without a leading ``./``.

    A bare string is taken as one pattern, not as a sequence of one-letter patterns.
    Raises ``ValidationError`` naming the pattern when it is empty, absolute, or has a
    ``..`` segment in any brace expansion (it could match outside the root).
    """
    items = [patterns] if isinstance(patterns, str) else list(patterns)
    out: list[str] = []
    for pattern in items:
        stripped = pattern
        while stripped.startswith("./"):
            stripped = stripped[2:]
        if not stripped.strip():
            raise ValidationError(f"{role} pattern {pattern!r} is empty")
        for variant in _expansions(pattern, role):
            plain = _ESCAPE.sub(r"\1", variant)
            if plain.startswith(("/", "\\")) or _DRIVE.match(plain):
                raise ValidationError(
                    f"{role} pattern {pattern!r} is absolute; patterns are relative to the root"
                )
            if ".." in plain.split("/"):
                raise ValidationError(
                    f"{role} pattern {pattern!r} has a '..' segment and could match outside "
                    "the root"
                )
        out.append(stripped)
    return out


def compile_patterns(patterns: Sequence[str]) -> Matcher:
    """Compile normalised patterns into one matcher for posix paths relative to the root.

    wcmatch's expansion limit counts all patterns together; ``normalize_patterns`` already
    applies it to each one, so a long list of modest patterns is not refused here.
    """
    return glob.compile(list(patterns), flags=GLOB_FLAGS, limit=0)


def literal_segments(patterns: Iterable[str], role: str) -> set[str]:
    """Every path segment the patterns spell out, after brace expansion and unescaping."""
    return {
        _ESCAPE.sub(r"\1", segment)
        for pattern in patterns
        for variant in _expansions(pattern, role)
        for segment in variant.split("/")
    }


def _expansions(pattern: str, role: str) -> list[str]:
    try:
        return bracex.expand(pattern, keep_escapes=True, limit=EXPANSION_LIMIT)
    except bracex.ExpansionLimitException as exc:
        raise ValidationError(f"{role} pattern {pattern!r}: {exc}") from exc

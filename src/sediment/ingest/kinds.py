"""Which ``kind`` a compiled document's chunks get.

Order: the document's own front matter ``kind:``, then the first ``KindRule`` whose glob
matches its path, then the default (``canonical``, as the reference implementation labels
compiled human documents). A kind is 1-64 characters of ``a-z 0-9 . _ -`` starting with a
letter or digit; case is not folded, so ``Decision`` is refused rather than guessed at.
Kinds starting with ``meta.`` are reserved for Sediment's own event chunks (proposals,
supersessions): a document could otherwise forge events by naming one.

A bad kind in configuration (rules, default) raises ``ValidationError``; a bad kind in a
document is reported as a warning and the document falls back to rule or default, so one
typo does not fail a whole compile.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from wcmatch import glob

from sediment.errors import ValidationError
from sediment.ingest.patterns import GLOB_FLAGS, normalize_patterns
from sediment.store.events import META_PREFIX

__all__ = ["DEFAULT_KIND", "KindRule", "kind_problem", "resolve_kind"]

DEFAULT_KIND = "canonical"
RESERVED_PREFIX = META_PREFIX

_KIND = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def kind_problem(kind: str) -> str | None:
    """Why ``kind`` is not allowed for compiled chunks, or ``None`` if it is."""
    if not _KIND.fullmatch(kind):
        return f"kind {kind!r} must match ^[a-z0-9][a-z0-9._-]{{0,63}}$"
    if kind.startswith(RESERVED_PREFIX):
        return f"kind {kind!r} is reserved: {RESERVED_PREFIX}* kinds are Sediment's own events"
    return None


def _check(kind: str, role: str) -> None:
    problem = kind_problem(kind)
    if problem:
        raise ValidationError(f"{role}: {problem}")


@dataclass(frozen=True, slots=True)
class KindRule:
    """Give documents whose root-relative path matches ``glob`` the kind ``kind``."""

    glob: str
    kind: str
    _pattern: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_pattern", normalize_patterns([self.glob], "kind rule")[0])
        _check(self.kind, f"kind rule {self.glob!r}")

    def matches(self, path: str) -> bool:
        """Glob semantics are those of ``--include`` (see ``sediment.ingest.patterns``)."""
        return glob.globmatch(path, self._pattern, flags=GLOB_FLAGS)


def resolve_kind(
    path: str,
    front_matter_kind: str | None,
    rules: Sequence[KindRule] = (),
    default: str = DEFAULT_KIND,
) -> tuple[str, str | None]:
    """The kind for the document at ``path`` and a warning if its own kind was refused."""
    _check(default, "default kind")
    warning = None
    if front_matter_kind is not None:
        warning = kind_problem(front_matter_kind)
        if warning is None:
            return front_matter_kind, None
        warning = f"front matter {warning}; using the rule or default kind instead"
    for rule in rules:
        if rule.matches(path):
            return rule.kind, warning
    return default, warning

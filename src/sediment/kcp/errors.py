"""The two errors the KCP package raises; both are ``ValidationError``s (a user's input).

    ValidationError
    ├── ManifestError    a knowledge.yaml cannot be parsed at all (not YAML, not UTF-8, an
    │                    unsafe tag, over a limit, a unit path that escapes the root)
    └── RemoteRefused    a federated manifest was not fetched (policy or network)
"""

from __future__ import annotations

from sediment.errors import ValidationError

__all__ = ["ManifestError", "RemoteRefused"]


class ManifestError(ValidationError):
    """The manifest never reaches validation; ``rule`` names the broken rule."""

    def __init__(self, message: str, *, rule: str, source: str = "", line: int | None = None
                 ) -> None:
        self.rule = rule
        self.source = source
        self.line = line
        self.detail = message
        where = source
        if line is not None:
            where = f"{source}:{line}" if source else f"line {line}"
        super().__init__(f"{where}: {message} [{rule}]" if where else f"{message} [{rule}]")


class RemoteRefused(ValidationError):
    """A remote manifest fetch that the federation guard refused or that failed."""

    def __init__(self, message: str, *, rule: str, url: str = "") -> None:
        self.rule = rule
        self.url = url
        self.detail = message
        super().__init__(f"{url}: {message} [{rule}]" if url else f"{message} [{rule}]")

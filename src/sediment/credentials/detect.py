"""Credential detection with detect-secrets' plugins, configured once.

Text an agent asks to store is scanned line by line, twice: as prose (quotes optional for
the entropy plugins, which then look at every word) and as a config file (so that an
unquoted ``password = hunter2`` counts as an assignment). The plugins are instantiated
directly rather than through detect-secrets' global settings, which are not thread-safe.
What is found is reported by type only: the secret itself is never echoed.

The entropy limits are detect-secrets' defaults (base64 4.5 bits, hex 3.0 bits per
character); a token must also be at least ``MIN_ENTROPY_TOKEN`` characters long, so
that short words and numbers in prose are not taken for keys.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from sediment.errors import ValidationError

MIN_ENTROPY_TOKEN = 20
MAX_SCANNED_CHARS = 200_000

_ENTROPY = {"Base64 High Entropy String", "Hex High Entropy String"}
_NAMES = {
    "Base64 High Entropy String": "a high-entropy token",
    "Hex High Entropy String": "a high-entropy hex token",
    "Secret Keyword": "a password or secret assignment",
    "Basic Auth Credentials": "a URL with a password",
    "Private Key": "a private key",
    "AWS Access Key": "an AWS key",
    "GitHub Token": "a GitHub token",
    "Slack Token": "a Slack token",
    "JSON Web Token": "a JWT",
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One credential found: its detect-secrets type, a plain name, and its line."""

    type: str
    name: str
    line: int


_LOCAL = threading.local()


def _plugins() -> list[Any]:
    """This thread's detect-secrets plugins (cheap, but not documented as thread-safe),
    made on first use: importing detect-secrets costs every process that never writes."""
    plugins: list[Any] | None = getattr(_LOCAL, "plugins", None)
    if plugins is None:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

        classes: list[Any] = list(get_mapping_from_secret_type_to_class().values())
        plugins = [cls() for cls in classes]
        _LOCAL.plugins = plugins
    return plugins


def _scan_line(line: str, number: int) -> list[Finding]:
    found: dict[str, Finding] = {}
    for plugin in _plugins():
        kind = str(getattr(plugin, "secret_type", type(plugin).__name__))
        for filename in ("memory.txt", "memory.cfg"):
            kwargs: dict[str, Any] = {"filename": filename, "line": line,
                                      "line_number": number}
            if kind in _ENTROPY:
                kwargs["enable_eager_search"] = True
            try:
                secrets = plugin.analyze_line(**kwargs)
            except Exception:  # a plugin's own failure must not block every write
                continue
            for s in secrets:
                value = str(s.secret_value or "")
                if kind in _ENTROPY and (
                        len(value) < MIN_ENTROPY_TOKEN
                        or plugin.calculate_shannon_entropy(value) <= plugin.entropy_limit):
                    continue
                found.setdefault(kind, Finding(kind, _NAMES.get(kind, kind), number))
    return list(found.values())


def find_credentials(text: str) -> list[Finding]:
    """Every distinct credential type in ``text`` (at its first line)."""
    out: dict[str, Finding] = {}
    for number, line in enumerate(text[:MAX_SCANNED_CHARS].splitlines(), 1):
        if not line.strip():
            continue
        for f in _scan_line(line, number):
            out.setdefault(f.type, f)
    return list(out.values())


def refuse_credentials(text: str, field: str = "content") -> None:
    """Raise ``ValidationError`` naming what was found; nothing is ever written after it."""
    found = find_credentials(text)
    if found:
        what = "; ".join(f"{f.name} ({f.type}) on line {f.line}" for f in found)
        raise ValidationError(
            f"{field} looks like it contains a credential: {what}. Credentials are never "
            "stored: remove the secret (describe where it lives instead) and try again")

"""Credential detection with detect-secrets' plugins, configured once.

Text an agent asks to store is scanned line by line, twice: as prose (quotes optional for
the entropy plugins, which then look at every word) and as a config file (so that an
unquoted assignment to a password key counts as one). The plugins are instantiated
directly rather than through detect-secrets' global settings, which are not thread-safe.
What is found is reported by type only: the secret itself is never echoed.

The entropy limits are detect-secrets' defaults (base64 4.5 bits, hex 3.0 bits per
character); a token must also be at least ``MIN_ENTROPY_TOKEN`` characters long, so
that short words and numbers in prose are not taken for keys.

Engineering text is not a credential (issue 26, item 10): digests and integrity strings
(``sha256:...``, ``sha512-...``) are masked first; a token right after an id label
(``trace_id=``, ``x-amz-id-2:``, ``etag``) is an identifier; a bare hex string (a commit
SHA, a trace id) counts only after a word such as ``secret`` or ``token``; a high-entropy
word made of real words (``src/sediment/cli/_options``) is a name; public IP addresses are
not secrets; a keyword's value that is code (an attribute, a call, a type, the name of an
environment variable) is not one either. Formats detect-secrets lacks come from
``formats.FORMATS``. The rates on labelled sets are in docs/security.md
(``python -m bench.credentials``).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from sediment.credentials.formats import BENIGN, CREDENTIAL_WORD, FORMATS
from sediment.errors import ValidationError
from sediment.format.model import check_unicode

MIN_ENTROPY_TOKEN = 20
MAX_SCANNED_CHARS = 200_000

_HEX = "Hex High Entropy String"
_KEYWORD = "Secret Keyword"
_ENTROPY = {"Base64 High Entropy String", _HEX}
_NOT_CREDENTIALS = {"Public IP (ipv4)"}
_PIECES = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+|[_./-]|.")
_CODE_VALUE = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+[,;)]*"  # e.api_key
    r"|[A-Za-z_][A-Za-z0-9_.]*[(\[].*"  # str(private), os.environ["KEY"]
    r"|(?:str|int|bytes|bool|None|Optional|list|dict|Path)\b.*"  # a type annotation
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # the name of an environment variable
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_PRIVATE_KEY = "Private Key"
_PEM_BODY = re.compile(r"[A-Za-z0-9+/]{40,}")
"""A keyword's value that is code, not a secret: an attribute, a call, a type, the name of
an environment variable; an unquoted snake_case name too."""
_ID_BEFORE = re.compile(
    r"(?i)(?:\bids?|[_-]ids?(?:[_-]\d)?|request|trace|span|etag|checksum|hash|digest|"
    r"fingerprint|commit|revision|nonce|uuid|guid|object|blob|tree)\b[\s\"':=#@(\[]*$")
"""A label right before a token that makes it an identifier (``x-amz-id-2: ...``,
``trace_id=...``, ``etag "..."``), as detect-secrets' ``is_likely_id_string`` does for
``_id``."""
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


def _identifier(value: str) -> bool:
    """Words in snake, kebab, dotted, path or camel case (``test_a_kind_rule_wins``,
    ``src/sediment/cli/_options``, ``HTTPServerErrorHandler``): names, not keys. A random
    token has one-letter pieces (``K7``, ``xQ``) and fails."""
    for piece in _PIECES.findall(value):
        if piece in "_./-":
            continue
        if piece.isdigit():
            if len(piece) > 4:
                return False
        elif len(piece) < 2 or not piece.isalpha():
            return False
    return True


def _prose(value: str) -> bool:
    """The rest of a sentence after ``secret:`` (``anything secret: Sediment refuses``):
    two or more words, most of them plain words."""
    words = value.split()
    plain = sum(1 for w in words if w.strip(",.;:!?()`'\"").isalpha())
    return len(words) >= 2 and plain * 3 >= len(words) * 2


def _kept(kind: str, value: str, line: str, plugin: Any) -> bool:
    """Whether a plugin's finding is a credential rather than engineering text."""
    from detect_secrets.filters import heuristic

    if kind in _ENTROPY:
        if len(value) < MIN_ENTROPY_TOKEN or heuristic.is_potential_uuid(value) \
                or heuristic.is_sequential_string(value) \
                or plugin.calculate_shannon_entropy(value) <= plugin.entropy_limit:
            return False
        at = line.find(value)
        if at >= 0 and _ID_BEFORE.search(line, max(0, at - 40), at):
            return False
        if kind == _HEX:
            return at > 0 and bool(CREDENTIAL_WORD.search(line, 0, at))
        return not _identifier(value)
    if kind == _KEYWORD:
        quoted = f'"{value}"' in line or f"'{value}'" in line
        value = value if quoted else value.rstrip(",;)")
        return not (heuristic.is_templated_secret(value)
                    or heuristic.is_prefixed_with_dollar_sign(value)
                    or heuristic.is_indirect_reference(line)
                    or _CODE_VALUE.fullmatch(value)
                    or _prose(value) or (not quoted and _SNAKE.fullmatch(value)))
    return True


def _scan_line(line: str, number: int) -> list[Finding]:
    found: dict[str, Finding] = {}
    masked = BENIGN.sub(" ", line)
    for plugin in _plugins():
        kind = str(getattr(plugin, "secret_type", type(plugin).__name__))
        if kind in _NOT_CREDENTIALS:
            continue
        for filename in ("memory.txt", "memory.cfg"):
            kwargs: dict[str, Any] = {"filename": filename, "line": masked,
                                      "line_number": number}
            if kind in _ENTROPY:
                kwargs["enable_eager_search"] = True
            try:
                secrets = plugin.analyze_line(**kwargs)
            except Exception:  # a plugin's own failure must not block every write
                continue
            for s in secrets:
                if _kept(kind, str(s.secret_value or ""), masked, plugin):
                    found.setdefault(kind, Finding(kind, _NAMES.get(kind, kind), number))
    for name, pattern in FORMATS:
        kind = name.split(" ", 1)[1]
        if kind not in found and pattern.search(line):
            found[kind] = Finding(kind, name, number)
    return list(found.values())


def find_credentials(text: str) -> list[Finding]:
    """Every distinct credential type in ``text`` (at its first line)."""
    out: dict[str, Finding] = {}
    lines = text[:MAX_SCANNED_CHARS].splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        for f in _scan_line(line, number):
            if f.type == _PRIVATE_KEY and not _PEM_BODY.search(
                    "\n".join(lines[number - 1:number + 1]).split("PRIVATE KEY", 1)[-1]):
                continue  # the header alone (code that looks for one) is no key
            out.setdefault(f.type, f)
    return list(out.values())


def refuse_credentials(text: str, field: str = "content") -> None:
    """Raise ``ValidationError`` naming what was found; nothing is ever written after it.
    Every text an agent stores passes here, so text no store can hold (a lone surrogate)
    is refused here too, with the field named."""
    check_unicode(text, field)
    found = find_credentials(text)
    if found:
        what = "; ".join(f"{f.name}{'' if f.name.endswith(f.type) else f' ({f.type})'} on "
                         f"line {f.line}" for f in found)
        raise ValidationError(
            f"{field} looks like it contains a credential: {what}. Credentials are never "
            "stored: remove the secret (describe where it lives instead) and try again")

"""Whether a manifest URL can name a host at all, shared by validation and fetching.

``urlsplit`` raises ValueError for some text (``https://[::1/x``), and a host name with a
label over 63 characters makes the resolver's IDNA codec raise UnicodeError: both are bad
input, so they are found here and reported as invalid URLs instead of escaping as internal
errors.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import SplitResult, urlsplit

__all__ = ["host_problem", "split_url"]

MAX_LABEL = 63
MAX_NAME = 253


def split_url(url: str) -> SplitResult:
    """``urlsplit`` with its lazy checks (host, port) run now; ValueError names the fault."""
    parts = urlsplit(url)
    _ = parts.hostname, parts.port
    return parts


def host_problem(host: str) -> str | None:
    """Why ``host`` cannot be looked up (DNS lengths, IDNA), or None when it can."""
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
        return None
    except ValueError:
        pass
    name = host[:-1] if host.endswith(".") else host
    for label in name.split("."):
        if not label:
            return "it has an empty label"
        if label.isascii() and len(label) > MAX_LABEL:
            return f"a label is {len(label):,} characters long; DNS allows {MAX_LABEL}"
    try:
        encoded = name.encode("idna")
    except UnicodeError:
        return ("IDNA cannot encode it (a label too long once encoded, or characters not "
                "allowed in host names)")
    if len(encoded) > MAX_NAME:
        return f"it is {len(encoded):,} characters long; DNS allows {MAX_NAME}"
    return None

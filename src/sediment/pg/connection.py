"""Store URLs and connections: the project a URL names, timeouts, and errors a user reads.

A store URL is a libpq URL with one extra query parameter, ``project``, the namespace on
the server (default ``default``): ``postgresql://user@host:5432/sediment?project=docs``.
It is removed before the URL reaches libpq, which would refuse it. Every connection has a
connect timeout and a statement timeout, so an unreachable or stuck server is an error
within seconds, never a hang; a failure is a :class:`~sediment.errors.StoreUnavailableError`
saying which of unreachable, refused credentials or missing database it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import SplitResult, parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import psycopg

from sediment.errors import StoreUnavailableError, ValidationError

DEFAULT_PROJECT = "default"
CONNECT_TIMEOUT_S = 5
STATEMENT_TIMEOUT_MS = 30_000
SCHEMES = ("postgresql", "postgres")
LOST = "the connection to the database server failed"
"""The cause an operation's error gives when its connection broke mid-way."""
_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """A parsed store URL: what libpq gets (``conninfo``) and the ``project`` in it."""

    conninfo: str
    project: str

    @property
    def redacted(self) -> str:
        """The URL without its password, for messages and logs."""
        return redact_url(self.conninfo)

    def scrub(self, text: str) -> str:
        """``text`` (a driver's error message) with this URL's passwords taken out."""
        return scrub(text, self.conninfo)


_SECRET_KEYS = {"password", "sslpassword"}
_MALFORMED = "(a malformed URL, not shown: it may hold a password)"


def _split(url: str) -> SplitResult | None:
    """``url``'s parts, or None when ``urlsplit`` cannot read it (an unclosed ``[`` of an
    IPv6 host, characters that NFKC normalisation turns into URL syntax)."""
    try:
        return urlsplit(url)
    except ValueError:
        return None


def _secrets(url: str) -> list[str]:
    parts = _split(url)
    if parts is None:
        return []
    found = []
    userinfo = parts.netloc.rpartition("@")[0]
    if ":" in userinfo:
        found.append(userinfo.split(":", 1)[1])
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True)
              if k.lower() in _SECRET_KEYS]
    for raw in re.findall(r"(?:^|&)(?:ssl)?password=([^&]*)", parts.query, re.IGNORECASE):
        found.append(raw)
    out = set()
    for secret in found:
        if secret:
            out |= {secret, unquote(secret)}
    return sorted(out, key=len, reverse=True)


def redact_url(url: str) -> str:
    """``url`` with the password of its user and its ``password``/``sslpassword`` query
    parameters replaced by ``***``: what every message, log line and page shows of a store
    URL (issue 26 item 11); a URL that cannot be parsed is not shown at all."""
    parts = _split(url)
    if parts is None:
        return _MALFORMED
    netloc = parts.netloc
    user, at, host = netloc.rpartition("@")
    if at and ":" in user:
        netloc = f"{user.split(':', 1)[0]}:***@{host}"
    query = "&".join(
        f"{key}=***" if key.lower() in _SECRET_KEYS else pair
        for pair in parts.query.split("&")
        for key in [unquote(pair.split("=", 1)[0])]) if parts.query else ""
    tail = (f"?{query}" if query else "") + (f"#{parts.fragment}" if parts.fragment else "")
    return f"{parts.scheme}://{netloc}{parts.path}{tail}" if parts.scheme else \
        urlunsplit(parts._replace(netloc=netloc, query=query))


def scrub(text: str, url: str) -> str:
    """``text`` with every password ``url`` holds (raw and decoded) replaced by ``***``."""
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    return text


def check_project(name: str) -> str:
    if not _PROJECT.match(name):
        raise ValidationError(f"project name {name!r} must be 1-64 letters, digits, '_', '.' "
                              "or '-', starting with a letter or digit")
    return name


def parse_store_url(url: str, project: str | None = None) -> StoreUrl:
    """Split ``url`` into libpq's URL and the project; an explicit ``project`` wins over
    the URL's ``?project=``."""
    parts = _split(url.strip())
    if parts is None:
        raise ValidationError("the store URL cannot be parsed (it is not shown: it may hold "
                              "a password): expected postgresql://[user[:password]@]host"
                              "[:port]/database[?project=NAME]")
    if parts.scheme not in SCHEMES:
        raise ValidationError(f"store {redact_url(url)!r} is not a PostgreSQL URL: expected "
                              "postgresql://[user[:password]@]host[:port]/database[?project=NAME]")
    query = parse_qsl(parts.query, keep_blank_values=True)
    named = [v for k, v in query if k == "project"]
    rest = [(k, v) for k, v in query if k != "project"]
    chosen = project if project is not None else (named[-1] if named else DEFAULT_PROJECT)
    query_text = urlencode(rest)
    # urlunsplit drops the ``//`` of an empty host (``postgresql:///db?host=/run/...``,
    # a Unix socket), which libpq then refuses
    conninfo = f"{parts.scheme}://{parts.netloc}{parts.path}" + \
        (f"?{query_text}" if query_text else "") + \
        (f"#{parts.fragment}" if parts.fragment else "")
    return StoreUrl(conninfo, check_project(chosen))


def _reason(exc: psycopg.Error) -> tuple[str, str]:
    """Why connecting failed: a cause naming no host or user, and the full reason."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    low = str(exc).lower()
    if "password authentication failed" in low or "authentication failed" in low:
        cause = "the database server refused the credentials"
        return cause, f"{cause} ({first}); check the user and password"
    if "does not exist" in low and "database" in low:
        return ("the database does not exist",
                f"{first}; create it (createdb) or fix the database name in the URL")
    if "timeout" in low or "timed out" in low:
        cause = f"the database server did not answer within {CONNECT_TIMEOUT_S}s"
        return cause, f"no answer within {CONNECT_TIMEOUT_S}s ({first})"
    return ("cannot connect to the database server",
            f"cannot connect ({first}); is the server running and the URL right?")


def connect(url: str | StoreUrl, *, connect_timeout: float = CONNECT_TIMEOUT_S,
            statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
            autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
    """A connection to the store ``url`` names, with bounded waits for connecting and for
    each statement (``statement_timeout_ms`` 0 disables the latter, for bulk loads)."""
    store = url if isinstance(url, StoreUrl) else parse_store_url(url)
    try:
        conn = psycopg.connect(store.conninfo, connect_timeout=max(1, round(connect_timeout)),
                               autocommit=autocommit,
                               options=f"-c statement_timeout={int(statement_timeout_ms)}")
    except psycopg.Error as exc:
        cause, reason = _reason(exc)
        raise StoreUnavailableError(f"store {store.redacted}: {store.scrub(reason)}",
                                    cause=cause) from exc
    return conn

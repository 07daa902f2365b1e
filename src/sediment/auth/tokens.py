"""Bearer tokens bound to actors, kept in the user's configuration directory.

A token is ``sdm_<id>_<secret>``: ``id`` (8 hex digits) finds the record, ``secret``
(``secrets.token_urlsafe(32)``, 256 bits) proves it. Only an HMAC-SHA256 of the whole token
under a per-token random salt is stored, so the file does not reveal a usable token; the
check recomputes it and compares with ``hmac.compare_digest``. A salted fast hash is enough
for a random 256-bit secret (a slow password hash protects guessable passwords, not keys).
The token is shown once, by ``create``.

The file is JSON (configuration, not workflow state: workflow state lives in layers),
written atomically with mode 0600::

    {"version": 1, "tokens": [{"id": "1a2b3c4d", "actor": "alice", "role": "writer",
      "salt": "<hex>", "hmac": "<hex>", "created_at_ms": 1767225600000}]}
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock

from sediment.auth.roles import ROLES, Permission, allowed, require
from sediment.errors import ConfigError, NotFoundError, SedimentError, ValidationError
from sediment.store.atomic import atomic_write

_ACTOR_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
_TOKEN_RE = re.compile(r"^sdm_([0-9a-f]{8})_([A-Za-z0-9_-]{20,})$")


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as."""

    actor: str
    role: str

    def may(self, permission: Permission) -> bool:
        return allowed(self.role, permission)

    def require(self, permission: Permission, what: str) -> None:
        """Raise PermissionDeniedError naming ``what`` unless this principal's role
        holds ``permission`` (sediment.auth.roles)."""
        require(self.actor, self.role, permission, what)


class TokenCheck(Protocol):
    """What authenticating a request needs of a token store (the file's or a database's)."""

    def any(self) -> bool:
        """Whether every request needs a token."""
        ...

    def verify(self, token: str) -> Principal | None:
        ...


class TokenList(TokenCheck, Protocol):
    """A token store that can also list its tokens (the web page ends the sessions of a
    revoked token)."""

    def list(self) -> list[TokenInfo]:
        ...


class FailClosed:
    """A server's decision whether a request needs a token: once it has needed one, it
    always does, so revoking the last token or emptying the token file never turns
    authentication off (it locks everyone out instead, until the server restarts).

    ``required`` starts it closed: a server bound off loopback, or one given a shared
    token. A store that cannot be read counts as needing a token. One instance is shared
    by the MCP endpoint, the HTTP API and the web page, so they always agree.
    """

    def __init__(self, tokens: TokenList, *, required: bool = False) -> None:
        self.tokens = tokens
        self._closed = required
        self.any()

    def any(self) -> bool:
        if not self._closed:
            try:
                self._closed = bool(self.tokens.any())
            except SedimentError:
                self._closed = True
        return self._closed

    def verify(self, token: str) -> Principal | None:
        return self.tokens.verify(token)

    def list(self) -> list[TokenInfo]:
        return self.tokens.list()


@dataclass(frozen=True, slots=True)
class TokenInfo:
    id: str
    actor: str
    role: str
    created_at_ms: int
    expires_at_ms: int | None = None
    """When the token stops working (None: never)."""
    project: str | None = None
    """The one project a team server's token works for (None: every project)."""

    def expired(self, now_ms: int | None = None) -> bool:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        return self.expires_at_ms is not None and now_ms >= self.expires_at_ms

    def to_dict(self) -> dict[str, Any]:
        """The fields, without an expiry or project the token does not have."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def _digest(salt: bytes, token: str) -> str:
    return hmac.new(salt, token.encode(), hashlib.sha256).hexdigest()


def check_grant(actor: object, role: object) -> None:
    """Refuse an actor name or a role a token cannot carry."""
    if not isinstance(actor, str) or not _ACTOR_RE.match(actor):
        raise ValidationError(f"actor {actor!r} is invalid: use 1-40 letters, digits, "
                              "'.', '_' or '-', starting with a letter or digit")
    if role not in ROLES:
        raise ValidationError(f"role {role!r} is unknown: use one of {', '.join(ROLES)}")


def mint(tid: str) -> tuple[str, bytes, str]:
    """A new token with id ``tid``, a fresh salt, and the token's HMAC under it (what a
    token store keeps: never the token)."""
    token = f"sdm_{tid}_{secrets.token_urlsafe(32)}"
    salt = secrets.token_bytes(16)
    return token, salt, _digest(salt, token)


def token_id(token: str) -> str | None:
    """The record id a well-formed token names, else None."""
    m = _TOKEN_RE.match(token)
    return m.group(1) if m else None


def matches(token: str, salt: bytes, digest: str) -> bool:
    """Compared as bytes: ``compare_digest`` raises TypeError on non-ASCII str."""
    return hmac.compare_digest(_digest(salt, token).encode(), digest.encode())


class TokenStore:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._cache: tuple[tuple[int, int] | None, list[dict[str, Any]]] | None = None

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _records(self) -> list[dict[str, Any]]:
        stamp = self._stamp()
        if self._cache is not None and self._cache[0] == stamp:
            return self._cache[1]
        if stamp is None:
            records: list[dict[str, Any]] = []
        else:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"{self.path}: cannot read the token file: {exc}") from exc
            raw = data.get("tokens") if isinstance(data, dict) else None
            if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
                raise ConfigError(f"{self.path}: not a Sediment token file")
            records = raw
        self._cache = (stamp, records)
        return records

    def _write(self, records: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": 1, "tokens": records}, indent=2, sort_keys=True)
        atomic_write(self.path, (text + "\n").encode(), mode=0o600)
        self._cache = None

    def _lock(self) -> FileLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.path.parent / f".{self.path.name}.lock"), timeout=30)

    def any(self) -> bool:
        return bool(self._records())

    def list(self) -> list[TokenInfo]:
        return [_info(r) for r in self._records()]

    def create(self, actor: str, role: str,
               expires_at_ms: int | None = None) -> tuple[str, TokenInfo]:
        """Mint a token for ``actor``, valid until ``expires_at_ms`` (None: until revoked);
        return it (shown once) and its record."""
        check_grant(actor, role)
        with self._lock():
            records = list(self._records())
            used = {r.get("id") for r in records}
            tid = secrets.token_hex(4)
            while tid in used:
                tid = secrets.token_hex(4)
            token, salt, digest = mint(tid)
            info = TokenInfo(tid, actor, role, int(time.time() * 1000), expires_at_ms)
            records.append({**info.to_dict(), "salt": salt.hex(), "hmac": digest})
            self._write(records)
        return token, info

    def revoke(self, token_id: str) -> TokenInfo:
        with self._lock():
            records = list(self._records())
            kept = [r for r in records if r.get("id") != token_id]
            if len(kept) == len(records):
                raise NotFoundError(f"no token with id {token_id!r} (see sediment token list)")
            gone = next(r for r in records if r.get("id") == token_id)
            self._write(kept)
        return _info(gone)

    def verify(self, token: str) -> Principal | None:
        """The principal a presented token stands for, or None."""
        tid = token_id(token)
        if tid is None:
            return None
        for r in self._records():
            if r.get("id") != tid:
                continue
            try:
                salt = bytes.fromhex(str(r.get("salt")))
            except ValueError:
                return None
            if matches(token, salt, str(r.get("hmac"))) and not _info(r).expired():
                return Principal(str(r.get("actor")), str(r.get("role")))
            return None
        return None


def _info(record: dict[str, Any]) -> TokenInfo:
    """A record's public part; an expiry that is not a number has passed (fail closed)."""
    expires = record.get("expires_at_ms")
    if expires is not None:
        ok = isinstance(expires, int | float) and not isinstance(expires, bool)
        expires = int(expires) if ok else 0
    return TokenInfo(str(record.get("id")), str(record.get("actor")), str(record.get("role")),
                     int(record.get("created_at_ms") or 0), expires)

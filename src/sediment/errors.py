"""Every error Sediment raises on purpose.

Adapters (CLI, MCP, HTTP) catch ``SedimentError`` and show its message; anything else is a
bug. Each class carries what every adapter answers for it, in one place: ``http_status``
and ``error_code`` (the HTTP API's status and error code) and ``exit_code`` (the CLI's).
Lower-level errors (``OSError``, ``json.JSONDecodeError``, HTTP failures) are translated at
the boundary with ``raise ... from exc`` so the message names what was wrong and where.

    SedimentError
    ├── FormatError            a layer file breaks a rule of RFC section 8
    ├── ValidationError        user input breaks a rule (bad kind, confidence, glob, ...)
    │   ├── RequestError       a service request's fields break their declared types or limits
    │   ├── ManifestError      a knowledge.yaml cannot be read (sediment.kcp)
    │   └── RemoteRefused      a remote manifest fetch broke the federation policy
    ├── NotFoundError          a file, layer or chunk id that does not exist
    ├── SchemaMismatchError    layers (or a layer and the embedder) do not share a schema
    ├── PermissionDeniedError  a write the trust model forbids (base, user from an agent)
    │   └── SignatureError     a layer's signature is missing, malformed or does not verify
    ├── EmbeddingError         the embedder failed (model missing, HTTP error, bad reply)
    ├── ConfigError            sediment.toml or an environment override is invalid
    ├── AgentError             a persona failed to load or to resolve (sediment.agents)
    │   └── AgentTimeoutError  a persona's script ran past its time limit
    ├── LockTimeoutError       another writer held the layer lock for too long
    └── StoreUnavailableError  the PostgreSQL store cannot be reached, refused the login, or
                               lacks pgvector (sediment.pg)
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "AgentTimeoutError",
    "ConfigError",
    "EmbeddingError",
    "FormatError",
    "LockTimeoutError",
    "NotFoundError",
    "PermissionDeniedError",
    "RequestError",
    "SchemaMismatchError",
    "SedimentError",
    "SignatureError",
    "StoreUnavailableError",
    "ValidationError",
]


class SedimentError(Exception):
    """Root of every error Sediment raises deliberately."""

    http_status = 400
    error_code = "bad_request"
    exit_code = 1


class FormatError(SedimentError):
    """A layer file violates the RFC; carries the rule, the field and the byte offset."""

    def __init__(
        self, message: str, *, rule: str = "", field: str = "", offset: int | None = None,
        path: str | None = None,
    ) -> None:
        self.rule = rule
        self.field = field
        self.offset = offset
        self.path = path
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.path:
            where.append(self.path)
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        prefix = f"{': '.join(where)}: " if where else ""
        rule = f" [{self.rule}]" if self.rule else ""
        fld = f"{self.field}: " if self.field else ""
        return f"{prefix}{fld}{self.detail}{rule}"

    def with_path(self, path: str) -> FormatError:
        """Return a copy that names the file (readers of bytes do not know it)."""
        return FormatError(
            self.detail, rule=self.rule, field=self.field, offset=self.offset, path=path
        )


class ValidationError(SedimentError):
    """User input breaks a documented rule."""


class RequestError(ValidationError):
    """A request to a service (search, write, propose) has a field of the wrong type or
    outside its limits; the message names each field and the rule it breaks."""


class NotFoundError(SedimentError):
    """A file, layer or chunk that was asked for does not exist."""

    http_status = 404
    error_code = "not_found"


class SchemaMismatchError(SedimentError):
    """Layers, or a layer and the active embedder, do not share a schema (RFC 8.3)."""


class PermissionDeniedError(SedimentError):
    """A write the trust model forbids, such as any write to the base layer."""

    http_status = 403
    error_code = "forbidden"


class SignatureError(PermissionDeniedError):
    """A layer's signature is missing, malformed, or does not verify with the given key."""


class EmbeddingError(SedimentError):
    """The embedder could not produce vectors."""


class ConfigError(SedimentError):
    """Configuration is invalid."""


class LockTimeoutError(SedimentError):
    """Another writer held a layer's lock for longer than the timeout."""


class AgentError(SedimentError):
    """A persona could not be loaded, or its script failed while resolving."""

    http_status = 500
    error_code = "agent_error"


class AgentTimeoutError(AgentError):
    """A persona's script ran past its instruction or time limit."""

    http_status = 408
    error_code = "timeout"


class StoreUnavailableError(SedimentError):
    """The PostgreSQL store is unreachable, refused the credentials, timed out, or lacks
    the pgvector extension; the message says which and how to fix it."""

    http_status = 503
    error_code = "unavailable"

    cause: str
    """What failed, in words that name no host, database or user: what an MCP caller
    reads (the message, with the store's URL, goes to the server's log)."""

    def __init__(self, message: str, *, cause: str = "cannot connect to the database "
                 "server") -> None:
        super().__init__(message)
        self.cause = cause

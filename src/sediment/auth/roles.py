"""What each role may do: the one table every adapter checks (docs/roles.md).

A token carries one role. Roles grow by inclusion: ``reader`` searches and recalls;
``writer`` also writes the local and delta layers, proposes, saves memories and context,
and marks usefulness; ``reviewer`` also accepts, rejects and promotes proposals and writes
global memories; ``admin`` also manages tokens. Every MCP tool, HTTP API endpoint and web
route names the :class:`Permission` it needs here, and calls :func:`require` (or
:func:`allowed`) with the caller's principal; the file token store and the team server's
database token store hand out the same :class:`~sediment.auth.tokens.Principal`, so the
same check serves both.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from sediment.errors import PermissionDeniedError


class Permission(StrEnum):
    READ = "read"
    WRITE = "write"
    REVIEW = "review"
    ADMIN = "admin"


ROLES = ("reader", "writer", "reviewer", "admin")
GRANTS: Mapping[str, frozenset[Permission]] = {
    "reader": frozenset({Permission.READ}),
    "writer": frozenset({Permission.READ, Permission.WRITE}),
    "reviewer": frozenset({Permission.READ, Permission.WRITE, Permission.REVIEW}),
    "admin": frozenset(Permission),
}
TOOLS: Mapping[str, Permission] = {
    "agents_search": Permission.READ,
    "agents.search": Permission.READ,
    "agents_context_write": Permission.WRITE,
    "agents.context.write": Permission.WRITE,
    "agents_context_propose": Permission.WRITE,
    "agents.context.propose": Permission.WRITE,
    "agents_get": Permission.READ,
    "agents_sources": Permission.READ,
    "search_knowledge": Permission.READ,
    "save_memory": Permission.WRITE,
    "recall_memories": Permission.READ,
    "manage_memory": Permission.WRITE,
    "get_relevant_context": Permission.READ,
    "get_iteration_history": Permission.READ,
    "get_skills": Permission.READ,
    "store_context": Permission.WRITE,
    "store_iteration_result": Permission.WRITE,
    "mark_useful": Permission.WRITE,
    "summarize_old_context": Permission.WRITE,
    "prune_low_value_context": Permission.WRITE,
    "get_context_stats": Permission.READ,
    "health_check": Permission.READ,
}
"""The permission each MCP tool (also reached as ``POST /tools/{name}``) needs."""

BY_ARGUMENT: Mapping[str, tuple[str, Mapping[object, Permission]]] = {
    "manage_memory": ("action", {"list": Permission.READ}),
}
"""Tools whose permission depends on one argument's value (else :data:`TOOLS`' entry)."""

ROUTES: Mapping[str, Permission] = {
    "GET /health": Permission.READ,
    "GET /tools/list": Permission.READ,
    "POST /tools/{name}": Permission.READ,
    "GET /agents/list": Permission.READ,
    "POST /agents/{name}/prompt": Permission.READ,
    "GET /openapi.json": Permission.READ,
    "GET /ui/queue": Permission.READ,
    "GET /ui/layers": Permission.READ,
    "GET /ui/search": Permission.READ,
    "POST /ui/decide": Permission.REVIEW,
}
"""The permission each HTTP route needs before anything else (a tool call then needs the
tool's own permission too)."""


def allowed(role: str, permission: Permission) -> bool:
    """Whether ``role`` holds ``permission`` (an unknown role holds none)."""
    return permission in GRANTS.get(role, frozenset())


def least_role(permission: Permission) -> str:
    """The smallest role holding ``permission``."""
    return next(r for r in ROLES if allowed(r, permission))


def tool_permission(name: str, arguments: Mapping[str, object] | None = None) -> Permission:
    """The permission calling tool ``name`` with ``arguments`` needs; a tool missing from
    the table needs ``admin``, so a new tool is closed until it is listed."""
    special = BY_ARGUMENT.get(name)
    if special is not None and arguments is not None:
        key, values = special
        value = arguments.get(key)
        if isinstance(value, str | int) and value in values:
            return values[value]
    return TOOLS.get(name, Permission.ADMIN)


def refusal(actor: str, role: str, permission: Permission, what: str) -> str:
    """The error text for a refused call: what was refused, what it needs, what the caller
    has."""
    return (f"{what} needs the {permission.value} permission (role {least_role(permission)} "
            f"or above); the token of actor {actor!r} has the {role} role")


def require(actor: str, role: str, permission: Permission, what: str) -> None:
    """Raise :class:`PermissionDeniedError` unless ``role`` holds ``permission``."""
    if not allowed(role, permission):
        raise PermissionDeniedError(refusal(actor, role, permission, what))

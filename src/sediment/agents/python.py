"""Python personas: trusted code, so loaded only from places the user chose.

Two places, never a repository's ``sediment.toml``: an installed package's entry point in
the group ``sediment.agents`` (the entry point's name is the persona's name), and
``[agents.python.NAME]`` in the user's own config with ``object = "package.module:attr"``.
The object (a module, class instance, ...) has ``resolve(args, config, context)`` and may
have ``description``, ``tools`` and ``arguments`` (a list of dicts with name, description,
required). It runs in the server's process with no sandbox and no time limit.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from sediment.agents.model import (
    PersonaContext,
    Resolved,
    check_arguments,
    info_from,
    prompt_from,
)
from sediment.errors import AgentError, SedimentError

__all__ = ["ENTRY_POINT_GROUP", "PythonPersona", "installed_personas", "persona_from_object"]

ENTRY_POINT_GROUP = "sediment.agents"


class _Counting:
    """The context handed to Python code, counting calls for ``sediment agent test``."""

    def __init__(self, inner: PersonaContext) -> None:
        self.inner = inner
        self.calls = {"searches": 0, "gets": 0, "sources": 0}

    def search(self, opts: Mapping[str, Any]) -> list[dict[str, Any]]:
        self.calls["searches"] += 1
        return self.inner.search(opts)

    def get(self, chunk_id: int) -> dict[str, Any] | None:
        self.calls["gets"] += 1
        return self.inner.get(chunk_id)

    def sources(self) -> list[dict[str, Any]]:
        self.calls["sources"] += 1
        return self.inner.sources()


class PythonPersona:
    def __init__(self, name: str, target: Any, *, config: Mapping[str, Any],
                 allowed: frozenset[str], aliases: Mapping[str, str], origin: str) -> None:
        fn = getattr(target, "resolve", None)
        if not callable(fn):
            raise AgentError(f"persona {name}: {origin} has no resolve(args, config, context)")
        self.fn: Callable[..., Any] = fn
        self.config = dict(config)
        self.allowed = allowed
        self.aliases = dict(aliases)
        self.info = info_from(name, "python", getattr(target, "description", ""),
                              getattr(target, "tools", []), getattr(target, "arguments", None),
                              allowed, aliases, origin)

    def resolve(self, args: Mapping[str, str], context: PersonaContext) -> Resolved:
        args = check_arguments(self.info, args)
        counting = _Counting(context)
        try:
            value = self.fn(dict(args), dict(self.config), counting)
        except SedimentError:
            raise
        except Exception as exc:
            raise AgentError(f"persona {self.info.name}: resolve failed: "
                             f"{type(exc).__name__}: {str(exc)[:500]}") from exc
        out = prompt_from(self.info, value, self.allowed, self.aliases)
        return Resolved(out.system, out.tools, out.messages, stats=dict(counting.calls))


def persona_from_object(name: str, spec: str, *, config: Mapping[str, Any],
                        allowed: frozenset[str], aliases: Mapping[str, str]) -> PythonPersona:
    """``spec`` is ``package.module:attr`` (or a module), importable in this environment."""
    try:
        target = pkgutil.resolve_name(spec)
    except Exception as exc:
        raise AgentError(f"persona {name}: cannot import {spec!r}: {type(exc).__name__}: "
                         f"{exc}") from exc
    return PythonPersona(name, target, config=config, allowed=allowed, aliases=aliases,
                         origin=spec)


def installed_personas(allowed: frozenset[str], aliases: Mapping[str, str], *,
                       on_error: Callable[[str, str, SedimentError], None] | None = None,
                       ) -> list[PythonPersona]:
    """Personas that installed packages declare in the ``sediment.agents`` group. One that
    fails to load is an error, or with ``on_error`` is handed to it (name, origin, error)
    and skipped."""
    out = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        origin = f"entry point {ep.value}"
        try:
            try:
                target = ep.load()
            except Exception as exc:
                raise AgentError(f"persona {ep.name}: cannot load entry point {ep.value!r}: "
                                 f"{type(exc).__name__}: {exc}") from exc
            out.append(PythonPersona(ep.name, target, config={}, allowed=allowed,
                                     aliases=aliases, origin=origin))
        except SedimentError as exc:
            if on_error is None:
                raise
            on_error(ep.name, origin, exc)
    return out

"""The personas a server offers, built from configuration tables and installed packages.

Tool names are resolved when a persona loads, against the tools the server registered:
short aliases (:data:`TOOL_ALIASES`) stand for Sediment's full names, and a name the server
does not serve is passed to the client as written (the personas specification's
response-level scoping: ``create_jira_ticket`` is the client's tool), with a warning
(:meth:`Registry.warnings`) so a typo is still seen. A persona that fails to load is kept
aside as a :class:`BrokenPersona` (its name, origin and error): the others, and every tool,
are served, and ``sediment agent list`` shows it as broken.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from sediment.agents.lua import DEFAULT_TIMEOUT, LuaPersona
from sediment.agents.model import (
    Persona,
    PersonaContext,
    PersonaInfo,
    Resolved,
    check_arguments,
    info_from,
    unserved_tools,
)
from sediment.agents.python import installed_personas, persona_from_object
from sediment.errors import AgentError, ConfigError, NotFoundError, SedimentError

__all__ = ["TOOL_ALIASES", "BrokenPersona", "Definition", "Registry", "TomlPersona",
           "load_registry", "tool_aliases"]

TOOL_ALIASES = {
    "search": "agents_search",
    "get": "agents_get",
    "sources": "agents_sources",
    "write": "agents_context_write",
    "propose": "agents_context_propose",
    "knowledge": "search_knowledge",
    "agents.search": "agents_search",
    "agents.context.write": "agents_context_write",
    "agents.context.propose": "agents_context_propose",
}
"""Short names a persona may use for Sediment's tools, and the RFC's dotted names (which
the server accepts when called but does not list)."""
MAX_TIMEOUT = 300.0
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_-]+)\s*\}\}")


class Definition(Protocol):
    """One persona table from a config file (``sediment.config.AgentDefinition``)."""

    name: str
    source: str
    table: dict[str, Any]
    origin: Path


def tool_aliases(tool_names: Collection[str]) -> dict[str, str]:
    """The aliases whose target the server serves (a served name is never shadowed)."""
    return {a: t for a, t in TOOL_ALIASES.items() if t in tool_names and a not in tool_names}


class TomlPersona:
    """A fixed system prompt; ``{{name}}`` in it is replaced by the argument's value."""

    def __init__(self, info: PersonaInfo, system_prompt: str) -> None:
        self.info = info
        self.system_prompt = system_prompt

    def resolve(self, args: Mapping[str, str], context: PersonaContext) -> Resolved:
        del context
        args = check_arguments(self.info, args)
        text = _PLACEHOLDER.sub(lambda m: args.get(m.group(1), m.group(0)), self.system_prompt)
        return Resolved(text, self.info.tools, (), stats={"searches": 0, "gets": 0,
                                                          "sources": 0})


@dataclass(frozen=True, slots=True)
class BrokenPersona:
    """A persona that failed to load: served by nobody, listed with why."""

    name: str
    source: str
    origin: str
    error: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


class Registry:
    """The personas that loaded, by name, and those that did not (a later entry of the
    same name replaces an earlier one, loaded or broken). ``served`` are the tools of the
    server they were loaded against (None: not known, so nothing is reported as
    unserved)."""

    def __init__(self, personas: Iterable[Persona | BrokenPersona] = (),
                 served: Collection[str] | None = None) -> None:
        self._personas: dict[str, Persona] = {}
        self._broken: dict[str, BrokenPersona] = {}
        self.served = None if served is None else frozenset(served)
        for p in personas:
            if isinstance(p, BrokenPersona):
                self.set_broken(p)
            else:
                self._broken.pop(p.info.name, None)
                self._personas[p.info.name] = p

    def set_broken(self, broken: BrokenPersona) -> None:
        """Take ``broken.name`` out of service, keeping why."""
        self._personas.pop(broken.name, None)
        self._broken[broken.name] = broken

    def warnings(self, name: str | None = None, tools: Iterable[str] = ()) -> list[str]:
        """One line per persona (or only ``name``, with the ``tools`` a resolution
        returned) naming the tools this server does not serve."""
        if self.served is None:
            return []
        out = []
        for info in self.list():
            if name is not None and info.name != name:
                continue
            listed = list(dict.fromkeys([*info.tools, *tools])) if name else list(info.tools)
            missing = unserved_tools(listed, self.served)
            if missing:
                out.append(f"warning: persona {info.name}: Sediment does not serve "
                           f"{', '.join(repr(t) for t in missing)}; passed to the client as "
                           "written (its own tools)")
        return out

    def list(self) -> list[PersonaInfo]:
        return [p.info for p in self._personas.values()]

    def broken(self) -> tuple[BrokenPersona, ...]:
        return tuple(self._broken.values())

    def find(self, name: str) -> Persona:
        try:
            return self._personas[name]
        except KeyError:
            if name in self._broken:
                raise NotFoundError(f"persona {name} failed to load: "
                                    f"{self._broken[name].error}") from None
            known = ", ".join(sorted(self._personas)) or "none configured"
            raise NotFoundError(f"no persona {name[:64]!r} (personas: {known})") from None

    def resolve(self, name: str, args: Mapping[str, Any], context: PersonaContext) -> Resolved:
        return self.find(name).resolve(args, context)

    def __len__(self) -> int:
        return len(self._personas)


def _where(d: Definition) -> str:
    kind = {"lua": "agents.script.", "python": "agents.python."}.get(d.source, "agents.")
    return f"{d.origin}: [{kind}{d.name}]"


def _toml(d: Definition, allowed: frozenset[str], aliases: Mapping[str, str]) -> TomlPersona:
    unknown = set(d.table) - {"description", "tools", "system_prompt", "arguments"}
    if unknown:
        raise ConfigError(f"{_where(d)}: unknown key(s) {', '.join(sorted(unknown))}; known: "
                          "arguments, description, system_prompt, tools")
    prompt = d.table.get("system_prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"{_where(d)}: system_prompt (a non-empty string) is required")
    try:
        info = info_from(d.name, "toml", d.table.get("description"), d.table.get("tools"),
                         d.table.get("arguments"), allowed, aliases, str(d.origin))
    except AgentError as exc:
        raise ConfigError(f"{d.origin}: {exc}") from None
    return TomlPersona(info, prompt)


def _timeout(d: Definition) -> float:
    value = d.table.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0 < value <= MAX_TIMEOUT:
        raise ConfigError(f"{_where(d)}: timeout must be a number of seconds, more than 0 and "
                          f"at most {MAX_TIMEOUT:g}")
    return float(value)


def _script(d: Definition, allowed: frozenset[str], aliases: Mapping[str, str]) -> LuaPersona:
    path = d.table.get("path")
    if not isinstance(path, str) or not path:
        raise ConfigError(f"{_where(d)}: path (the Lua script, relative to "
                          f"{d.origin.parent}) is required")
    config = {k: v for k, v in d.table.items() if k not in ("path", "timeout")}
    return LuaPersona(d.name, d.origin.parent / Path(path).expanduser(), config=config,
                      allowed=allowed, aliases=aliases, timeout=_timeout(d))


def _python(d: Definition, allowed: frozenset[str], aliases: Mapping[str, str]) -> Persona:
    spec = d.table.get("object")
    if not isinstance(spec, str) or not spec:
        raise ConfigError(f"{_where(d)}: object (\"package.module:attr\") is required")
    config = {k: v for k, v in d.table.items() if k != "object"}
    return persona_from_object(d.name, spec, config=config, allowed=allowed, aliases=aliases)


def load_registry(definitions: Iterable[Definition], tool_names: Collection[str], *,
                  installed: bool = True) -> Registry:
    """Every persona: installed packages' first, then the config's (which win by name).
    One that fails to load is a :class:`BrokenPersona` in the registry, not an error."""
    allowed = frozenset(tool_names)
    aliases = tool_aliases(allowed)
    personas: list[Persona | BrokenPersona] = []
    if installed:
        personas.extend(installed_personas(
            allowed, aliases, on_error=lambda name, origin, exc: personas.append(
                BrokenPersona(name, "python", origin, str(exc)))))
    for d in definitions:
        try:
            personas.append(_load(d, allowed, aliases))
        except SedimentError as exc:
            personas.append(BrokenPersona(d.name, d.source, str(d.origin), str(exc)))
    return Registry(personas, served=allowed)


def _load(d: Definition, allowed: frozenset[str], aliases: Mapping[str, str]) -> Persona:
    if d.source == "toml":
        return _toml(d, allowed, aliases)
    if d.source == "lua":
        return _script(d, allowed, aliases)
    if d.source == "python":
        return _python(d, allowed, aliases)
    raise ConfigError(f"{d.origin}: persona {d.name}: unknown source {d.source!r}")

"""What a persona is (its public description) and what resolving one gives (the prompt).

A persona's ``resolve`` reaches the store only through a :class:`PersonaContext`, which
the adapter that serves the persona builds over its service; this package never imports
the services, so a persona sees exactly the three functions handed to it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from sediment.errors import AgentError, RequestError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")
"""Persona and argument names: safe in a URL path and in a prompt picker."""
TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}\Z")
"""A tool name as MCP allows it (1-128 letters, digits, '_', '-', '.')."""
MAX_ARGUMENT_CHARS = 10_000
MAX_PROMPT_CHARS = 1_000_000
MAX_MESSAGES = 100
Source = Literal["toml", "lua", "python"]
ROLES = ("user", "assistant", "system")


@dataclass(frozen=True, slots=True)
class Argument:
    name: str
    description: str = ""
    required: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "required": self.required}


@dataclass(frozen=True, slots=True)
class PersonaInfo:
    """What ``agents/list`` and ``prompts/list`` show. ``tools`` are canonical tool names;
    ``origin`` says where the persona was defined (a file, or a package's entry point)."""

    name: str
    description: str
    tools: tuple[str, ...]
    source: Source
    arguments: tuple[Argument, ...] = ()
    origin: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "tools": list(self.tools),
                "source": self.source, "arguments": [a.to_dict() for a in self.arguments]}


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class Resolved:
    """A resolved persona: its system text, the tools it uses, messages to start with."""

    system: str
    tools: tuple[str, ...]
    messages: tuple[Message, ...] = ()
    stats: dict[str, int] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"system": self.system, "tools": list(self.tools),
                "messages": [m.to_dict() for m in self.messages]}


class PersonaContext(Protocol):
    """The store as a persona's ``resolve`` sees it (and nothing else of the host)."""

    def search(self, opts: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Search results for ``opts`` (``query``, ``k``, ``mode``, ``filters``, ``layers``)."""
        ...

    def get(self, chunk_id: int) -> dict[str, Any] | None:
        """A chunk as precedence resolves it, or None when no layer holds the id."""
        ...

    def sources(self) -> list[dict[str, Any]]:
        """The layers present (name, path, number of chunks)."""
        ...


class Persona(Protocol):
    info: PersonaInfo

    def resolve(self, args: Mapping[str, str], context: PersonaContext) -> Resolved: ...


def check_arguments(info: PersonaInfo, args: Mapping[str, Any]) -> dict[str, str]:
    """The caller's arguments, checked against the persona's declared ones: strings only,
    every required one present, no unknown names (a RequestError names the argument)."""
    declared = {a.name for a in info.arguments}
    out: dict[str, str] = {}
    for key, value in args.items():
        if key not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise RequestError(f"persona {info.name}: unknown argument {key[:64]!r} "
                               f"(arguments: {known})")
        if not isinstance(value, str):
            raise RequestError(f"persona {info.name}: argument {key} must be a string, got "
                               f"{type(value).__name__}")
        if len(value) > MAX_ARGUMENT_CHARS:
            raise RequestError(f"persona {info.name}: argument {key} has {len(value)} "
                               f"characters; the maximum is {MAX_ARGUMENT_CHARS}")
        out[key] = value
    for a in info.arguments:
        if a.required and not out.get(a.name, "").strip():
            raise RequestError(f"persona {info.name}: argument {a.name} is required")
    return out


def prompt_from(info: PersonaInfo, value: Any, allowed: frozenset[str],
                aliases: Mapping[str, str]) -> Resolved:
    """A ``resolve`` function's return value (a mapping with ``system``, optional ``messages``
    and ``tools``) as a :class:`Resolved`; anything malformed is an AgentError naming it."""
    where = f"persona {info.name}: resolve"
    if not isinstance(value, Mapping):
        got = "an empty table" if value == [] else type(value).__name__
        raise AgentError(f"{where} must return a table with system (a string), got {got}")
    unknown = set(value) - {"system", "messages", "tools"}
    if unknown:
        raise AgentError(f"{where} returned unknown key(s) "
                         f"{', '.join(sorted(str(k)[:64] for k in unknown))}; "
                         "known: system, messages, tools")
    system = value.get("system")
    if not isinstance(system, str):
        raise AgentError(f"{where} must return system as a string")
    messages: list[Message] = []
    raw = value.get("messages") or []
    if not isinstance(raw, list | tuple) or len(raw) > MAX_MESSAGES:
        raise AgentError(f"{where}: messages must be a list of at most {MAX_MESSAGES}")
    total = len(system)
    for i, m in enumerate(raw):
        if not isinstance(m, Mapping) or m.get("role") not in ROLES \
                or not isinstance(m.get("content"), str):
            raise AgentError(f"{where}: messages[{i}] must have role (user, assistant or "
                             "system) and content (a string)")
        total += len(m["content"])
        messages.append(Message(m["role"], m["content"]))
    if total > MAX_PROMPT_CHARS:
        raise AgentError(f"{where} returned {total} characters; the maximum is "
                         f"{MAX_PROMPT_CHARS}")
    tools = info.tools
    if value.get("tools") is not None:
        listed = value["tools"]
        if not isinstance(listed, list | tuple) or not all(isinstance(t, str) for t in listed):
            raise AgentError(f"{where}: tools must be a list of tool names")
        tools = canonical_tools(info.name, listed, allowed, aliases, error=AgentError)
    return Resolved(system, tools, tuple(messages))


def canonical_tools(persona: str, names: Any, allowed: frozenset[str],
                    aliases: Mapping[str, str],
                    error: type[Exception] = AgentError) -> tuple[str, ...]:
    """Tool names as the server registers them (aliases expanded, duplicates dropped). A
    name the server does not serve is kept as written: the client may serve it (a tool of
    its own, the specification's ``create_jira_ticket``); :func:`unserved_tools` finds
    them for a warning. A name no MCP client could call is an error naming it."""
    del allowed
    out: list[str] = []
    for name in names:
        if not TOOL_NAME_RE.match(name):
            raise error(f"persona {persona}: tool name {str(name)[:64]!r} must be 1-128 "
                        "letters, digits, '_', '-' or '.'")
        full = aliases.get(name, name)
        if full not in out:
            out.append(full)
    return tuple(out)


def unserved_tools(tools: Iterable[str], allowed: Collection[str]) -> list[str]:
    """The tools of a persona that this server does not serve (passed to the client)."""
    return [t for t in tools if t not in allowed]


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise AgentError(f"{where} must be a string")
    return value


def arguments_from(persona: str, raw: Any) -> tuple[Argument, ...]:
    """Declared arguments: a list of tables with name, and optionally description and
    required (false by default)."""
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise AgentError(f"persona {persona}: arguments must be a list")
    out: list[Argument] = []
    for i, a in enumerate(raw):
        where = f"persona {persona}: arguments[{i}]"
        if not isinstance(a, Mapping) or set(a) - {"name", "description", "required"}:
            raise AgentError(f"{where} must have name, and optionally description and "
                             "required")
        arg_name = a.get("name")
        if not isinstance(arg_name, str) or not NAME_RE.match(arg_name):
            raise AgentError(f"{where}.name must be 1-64 letters, digits, '_' or '-'")
        if any(arg_name == o.name for o in out):
            raise AgentError(f"{where}: argument {arg_name} is declared twice")
        required = a.get("required", False)
        if not isinstance(required, bool):
            raise AgentError(f"{where}.required must be true or false")
        out.append(Argument(arg_name, _text(a.get("description"), f"{where}.description"),
                            required))
    return tuple(out)


def info_from(persona: str, source: Source, description: Any, tools: Any, arguments: Any,
              allowed: frozenset[str], aliases: Mapping[str, str], origin: str) -> PersonaInfo:
    """A persona's public description from its raw metadata, every field checked."""
    if not NAME_RE.match(persona):
        raise AgentError(f"persona {persona[:64]!r}: a persona name is 1-64 letters, digits, "
                         "'_' or '-', starting with a letter or digit")
    if tools is None:
        tools = []
    if not isinstance(tools, list | tuple) or not all(isinstance(t, str) for t in tools):
        raise AgentError(f"persona {persona}: tools must be a list of tool names")
    return PersonaInfo(persona, _text(description, f"persona {persona}: description"),
                       canonical_tools(persona, tools, allowed, aliases), source,
                       arguments_from(persona, arguments), origin)

"""Personas: a system prompt, a scoped tool list and pre-fetched context, served to agents.

Defined in configuration (``[agents.NAME]``), in sandboxed Lua (``[agents.script.NAME]``)
or in Python (installed packages, or the user's own config). Adapters (MCP prompts, the
HTTP API, ``sediment agent``) hand each resolution a :class:`PersonaContext` over the store.
"""

from sediment.agents.lua import LuaPersona
from sediment.agents.model import (
    Argument,
    Message,
    Persona,
    PersonaContext,
    PersonaInfo,
    Resolved,
)
from sediment.agents.python import ENTRY_POINT_GROUP, PythonPersona
from sediment.agents.registry import (
    TOOL_ALIASES,
    BrokenPersona,
    Definition,
    Registry,
    TomlPersona,
    load_registry,
    tool_aliases,
)
from sediment.agents.scaffold import scaffold_script

__all__ = [
    "ENTRY_POINT_GROUP",
    "TOOL_ALIASES",
    "Argument",
    "BrokenPersona",
    "Definition",
    "LuaPersona",
    "Message",
    "Persona",
    "PersonaContext",
    "PersonaInfo",
    "PythonPersona",
    "Registry",
    "Resolved",
    "TomlPersona",
    "load_registry",
    "scaffold_script",
    "tool_aliases",
]

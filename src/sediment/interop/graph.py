"""The knowledge-graph shape two formats share (the MCP memory server's JSON Lines and
basic-memory's notes): entities with a type, observations about them, and typed
relations between them.

On import, an entity is a memory of its own (``Name (type)``) that its observations and
relations point at through ``related_to``; an observation is ``Name: text``, so a recall
finds it by its subject; a relation is ``From relation To``. The origin keeps each part as
written (``part``, ``entity``, ``entity_type``, ``text``, ``relation``, ``target``), and an
export rebuilds the graph from those: :func:`build`. A memory that came from elsewhere
becomes an observation of its context (or, without one, of its actor).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sediment.interop.model import Item, context_name
from sediment.memory import Memory


def entity_item(fmt: str, source: str, name: str, entity_type: str,
                extra: dict[str, Any] | None = None) -> Item:
    origin = {"format": fmt, "part": "entity", "entity": name, "entity_type": entity_type,
              **(extra or {})}
    return Item(f"{name} ({entity_type})", "fact", source, origin,
                context=context_name(name), key=name)


def observation_item(fmt: str, source: str, name: str, text: str, category: str,
                     extra: dict[str, Any] | None = None) -> Item:
    origin = {"format": fmt, "part": "observation", "entity": name, "text": text,
              **(extra or {})}
    return Item(f"{name}: {text}", category, source, origin, context=context_name(name),
                refs=(name,), bare=text)


def relation_item(fmt: str, source: str, frm: str, relation: str, to: str,
                  extra: dict[str, Any] | None = None) -> Item:
    origin = {"format": fmt, "part": "relation", "entity": frm, "relation": relation,
              "target": to, **(extra or {})}
    return Item(f"{frm} {relation} {to}", "fact", source, origin, context=context_name(frm),
                refs=(frm, to))


def prose_item(fmt: str, source: str, name: str, text: str) -> Item:
    origin = {"format": fmt, "part": "prose", "entity": name, "text": text}
    return Item(text, "fact", source, origin, context=context_name(name), refs=(name,))


@dataclass(slots=True)
class Node:
    """An entity as an export writes it."""

    name: str
    entity_type: str = ""
    observations: list[tuple[str, str]] = field(default_factory=list)
    """(category as the format wrote it, text)."""
    relations: list[tuple[str, str]] = field(default_factory=list)
    """(relation, target)."""
    rest: dict[tuple[str, str], str] = field(default_factory=dict)
    """What followed a relation on its line (basic-memory's ``(context)``)."""
    prose: list[str] = field(default_factory=list)
    origin: dict[str, Any] = field(default_factory=dict)
    """The entity part's origin (front matter, file path)."""


def _str(origin: dict[str, Any], key: str) -> str | None:
    value = origin.get(key)
    return value if isinstance(value, str) and value else None


def build(memories: Iterable[Memory], *, default_type: str = "topic") -> dict[str, Node]:
    """The graph of ``memories`` (in their order), entities in order of first mention."""
    nodes: dict[str, Node] = {}

    def node(name: str, entity_type: str = "") -> Node:
        got = nodes.get(name)
        if got is None:
            got = nodes[name] = Node(name, entity_type)
        elif entity_type and not got.entity_type:
            got.entity_type = entity_type
        return got

    for m in memories:
        o = m.origin or {}
        part, name = o.get("part"), _str(o, "entity")
        if part == "entity" and name:
            n = node(name, _str(o, "entity_type") or "")
            n.origin = o
        elif part == "observation" and name and _str(o, "text"):
            obs = (str(o.get("category") or m.category), str(o["text"]))
            n = node(name)
            if obs not in n.observations:
                n.observations.append(obs)
        elif part == "relation" and name and _str(o, "relation") and _str(o, "target"):
            rel = (str(o["relation"]), str(o["target"]))
            n = node(name)
            if rel not in n.relations:
                n.relations.append(rel)
                if _str(o, "rest"):
                    n.rest[rel] = str(o["rest"])
        elif part == "prose" and name and _str(o, "text"):
            n = node(name)
            if o["text"] not in n.prose:
                n.prose.append(str(o["text"]))
        else:
            owner = m.context or m.actor
            n = node(owner, default_type if m.context else "actor")
            if (m.category, m.content) not in n.observations:
                n.observations.append((m.category, m.content))
    for n in nodes.values():
        n.entity_type = n.entity_type or default_type
    return nodes

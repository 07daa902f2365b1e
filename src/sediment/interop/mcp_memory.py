"""The MCP reference memory server's knowledge graph (``memory.jsonl``).

One JSON object a line: ``{"type": "entity", "name", "entityType", "observations":
[...]}`` or ``{"type": "relation", "from", "to", "relationType"}`` (the server writes
entities first, then relations). See :mod:`sediment.interop.graph` for what each becomes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sediment.interop import graph
from sediment.interop.jsonstream import records
from sediment.interop.model import Item, Reading, fail, shown_path
from sediment.memory import Memory

NAME = "mcp-memory"


def _text(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise fail(where, f"{record.get('type')} needs {key!r} as non-empty text, got "
                          f"{json.dumps(value)[:60]}")
    return value


def read(path: Path, root: Path, reading: Reading) -> Iterator[Item]:
    """Entities and their observations, then (a second pass, so a relation may come
    before its entities) relations."""
    if path.is_dir():
        raise fail(str(path), "is a directory; give the memory.jsonl file")
    shown = shown_path(path, root)
    for relations in (False, True):
        for line, record in records(path, shown):
            where = f"{shown}:{line}"
            if not isinstance(record, dict):
                raise fail(where, "not a JSON object")
            kind = record.get("type")
            if kind == "entity":
                if relations:
                    continue
                name = _text(record, "name", where)
                etype = _text(record, "entityType", where)
                obs = record.get("observations", [])
                if not isinstance(obs, list):
                    raise fail(where, "observations must be a list of texts")
                yield graph.entity_item(NAME, where, name, etype)
                for i, o in enumerate(obs):
                    if not isinstance(o, str) or not o.strip():
                        raise fail(where, f"observations[{i}] must be non-empty text")
                    yield graph.observation_item(NAME, where, name, o, "fact",
                                                 {"entity_type": etype})
            elif kind == "relation":
                if not relations:
                    continue
                yield graph.relation_item(NAME, where, _text(record, "from", where),
                                          _text(record, "relationType", where),
                                          _text(record, "to", where))
            else:
                raise fail(where, f"type {json.dumps(kind)[:40]} is neither 'entity' nor "
                                  "'relation'")


def write(memories: Iterable[Memory]) -> bytes:
    """The graph as the server writes it: entities, then relations, one per line."""
    nodes = graph.build(memories)
    lines = [json.dumps({"type": "entity", "name": n.name, "entityType": n.entity_type,
                         "observations": [t for _, t in n.observations] + n.prose},
                        ensure_ascii=False) for n in nodes.values()]
    lines += [json.dumps({"type": "relation", "from": n.name, "to": to,
                          "relationType": rel}, ensure_ascii=False)
              for n in nodes.values() for rel, to in n.relations]
    return "".join(line + "\n" for line in lines).encode("utf-8")

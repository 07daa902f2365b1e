"""A mem0 export: memories with ``id``, ``memory``, ``user_id`` (and ``agent_id``,
``run_id``, ``app_id``), ``metadata``, ``categories``, ``hash``, ``created_at`` and
``updated_at``, as ``get_all`` returns them (``{"results": [...]}``), as a JSON array, or
one per line.

Each becomes a memory of its ``user_id`` (made a valid actor name where it is not: the
original is kept), else its ``agent_id``, else the importing actor; its category is
``metadata.category`` or the first of ``categories`` that names one of Sediment's, else
``fact``. mem0 extracts memories with a model, so they are saved as ``inferred``. Every
field is kept in the origin, so an export gives the same records back.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sediment.interop.jsonstream import records
from sediment.interop.model import Item, Reading, category_of, fail, shown_path
from sediment.memory import Memory

NAME = "mem0"
FIELDS = ("id", "user_id", "agent_id", "run_id", "app_id", "metadata", "categories", "hash",
          "created_at", "updated_at")
_BAD = re.compile(r"[^A-Za-z0-9_.-]")


def actor_name(value: str) -> str:
    """A mem0 id as an actor name (1-40 letters, digits, ``._-``, starting with a letter
    or digit)."""
    name = _BAD.sub("-", value).lstrip("._-")[:40]
    return name or "user"


def _category(record: dict[str, Any]) -> str:
    meta = record.get("metadata")
    if isinstance(meta, dict) and category_of(meta.get("category"), "") :
        return category_of(meta.get("category"))
    for c in record.get("categories") or ():
        if category_of(c, ""):
            return category_of(c)
    return "fact"


def read(path: Path, root: Path, reading: Reading) -> Iterator[Item]:
    if path.is_dir():
        raise fail(str(path), "is a directory; give the exported JSON file")
    shown = shown_path(path, root)
    for line, record in records(path, shown):
        where = f"{shown}:{line}"
        if not isinstance(record, dict):
            raise fail(where, "not a JSON object (a mem0 memory)")
        text = record.get("memory")
        if not isinstance(text, str) or not text.strip():
            raise fail(where, "'memory' must be non-empty text")
        for key in ("id", "user_id", "agent_id", "run_id", "app_id", "hash", "created_at",
                    "updated_at"):
            value = record.get(key)
            if value is not None and not isinstance(value, str):
                raise fail(where, f"{key!r} must be text, got {json.dumps(value)[:40]}")
        if record.get("metadata") is not None and not isinstance(record["metadata"], dict):
            raise fail(where, "'metadata' must be an object")
        cats = record.get("categories")
        if cats is not None and not (isinstance(cats, list)
                                     and all(isinstance(c, str) for c in cats)):
            raise fail(where, "'categories' must be a list of texts")
        owner = record.get("user_id") or record.get("agent_id")
        origin: dict[str, Any] = {"format": NAME, "part": "memory"}
        origin.update({k: record[k] for k in FIELDS if record.get(k) is not None})
        yield Item(text, _category(record), where, origin,
                   actor=actor_name(owner) if owner else None, learned="inferred")


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def record_of(m: Memory) -> dict[str, Any]:
    """The mem0 record of a memory: the fields it came with when it came from mem0, else
    made from the memory (a stable id, the text's MD5 as mem0 computes ``hash``)."""
    o = m.origin if m.origin and m.origin.get("format") == NAME else {}
    made = str(uuid.uuid5(uuid.NAMESPACE_URL, f"sediment:{m.actor}:{m.ref}"))
    if o:
        return {"id": o.get("id") or made, "memory": m.content,
                **{k: o[k] for k in FIELDS if k != "id" and k in o}}
    at = _iso(m.created_at_ms)
    return {"id": made, "memory": m.content,
            "hash": hashlib.md5(m.content.encode("utf-8"), usedforsecurity=False).hexdigest(),
            "metadata": {"category": m.category}, "created_at": at, "updated_at": at,
            "user_id": m.actor}


def write(memories: Iterable[Memory]) -> bytes:
    """``{"results": [...]}``, as mem0's ``get_all`` answers."""
    body = {"results": [record_of(m) for m in memories]}
    return (json.dumps(body, ensure_ascii=False, indent=2) + "\n").encode("utf-8")

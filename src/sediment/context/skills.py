"""Skills in and out: an ACE skillbook (kayba-ai/agentic-context-engine's JSON) and Agent
Skills folders (``<name>/SKILL.md`` with ``name`` and ``description`` front matter).

ACE skillbook: ``{"skills": {"<id>": {"id", "section", "content", "justification",
"evidence", "status": "active" | "invalid", "sources", "created_at", "updated_at"}, ...},
"sections": {"<section>": ["<id>", ...]}}`` (a list of skills is read as well). Invalid
skills are not imported; an imported skill is a ``skill`` item tagged with its section,
and its ACE fields are kept in the item's metadata so an export writes them back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sediment.errors import ValidationError

_NAME = re.compile(r"[^a-z0-9-]+")
ACE_FIELDS = ("justification", "evidence", "sources", "created_at", "updated_at")


@dataclass(frozen=True, slots=True)
class Skill:
    content: str
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


def read_ace(path: Path) -> list[Skill]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValidationError(f"{path}: not a readable ACE skillbook: {exc}") from exc
    raw = data.get("skills") if isinstance(data, dict) else None
    if not isinstance(raw, dict | list):
        raise ValidationError(f"{path}: an ACE skillbook needs a 'skills' object or list")
    rows: Iterable[Any] = raw.values() if isinstance(raw, dict) else raw
    out = []
    for i, s in enumerate(rows):
        if not isinstance(s, dict) or not isinstance(s.get("content"), str) \
                or not s["content"].strip():
            raise ValidationError(f"{path}: skill {i} has no content")
        if s.get("status", "active") != "active":
            continue
        section = str(s.get("section") or "general")
        meta = {"ace_id": str(s.get("id", "")), "section": section}
        meta.update({k: s[k] for k in ACE_FIELDS if k in s})
        out.append(Skill(s["content"], (section,), meta))
    return out


def write_ace(path: Path, skills: Iterable[dict[str, Any]]) -> int:
    """Write skill items (as the service describes them) as an ACE skillbook."""
    book: dict[str, Any] = {"skills": {}, "sections": {}}
    for d in skills:
        meta = d.get("metadata") or {}
        sid = str(meta.get("ace_id") or d["id"])
        section = str(meta.get("section") or (d.get("tags") or ["general"])[0])
        entry = {"id": sid, "section": section, "content": d["content"], "status": "active"}
        entry.update({k: meta[k] for k in ACE_FIELDS if k in meta})
        book["skills"][sid] = entry
        book["sections"].setdefault(section, []).append(sid)
    path.write_text(json.dumps(book, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(book["skills"])


def _front_matter(text: str, where: Path) -> tuple[dict[str, str], str]:
    if not text.startswith("---\n"):
        raise ValidationError(f"{where}: SKILL.md must start with '---' front matter")
    end = text.find("\n---", 4)
    if end < 0:
        raise ValidationError(f"{where}: the front matter is not closed by '---'")
    fields: dict[str, str] = {}
    for line in text[4:end].splitlines():
        if ":" in line and not line.startswith((" ", "\t")):
            key, _, value = line.partition(":")
            value = value.strip()
            if value.startswith('"'):
                try:
                    value = str(json.loads(value))
                except ValueError:
                    value = value.strip('"')
            fields[key.strip()] = value.strip("'")
    return fields, text[end + 4:].lstrip("\n")


def read_agent_skills(folder: Path) -> list[Skill]:
    """Every ``*/SKILL.md`` under ``folder`` (one skill each)."""
    files = sorted(folder.glob("*/SKILL.md"))
    if not files:
        raise ValidationError(f"{folder}: no <name>/SKILL.md files")
    out = []
    for f in files:
        fm, body = _front_matter(f.read_text(encoding="utf-8"), f)
        if not fm.get("name") or not fm.get("description"):
            raise ValidationError(f"{f}: front matter needs name and description")
        content = f"{fm['description']}\n\n{body.strip()}".strip()
        out.append(Skill(content, ("agent-skill",),
                         {"name": fm["name"], "description": fm["description"]}))
    return out


def write_agent_skills(folder: Path, skills: Iterable[dict[str, Any]]) -> int:
    skills = list(skills)
    for d in skills:
        meta = d.get("metadata") or {}
        name = meta.get("name") or _NAME.sub("-", d["content"][:40].lower()).strip("-") \
            or d["id"]
        description = meta.get("description") or d["content"].split("\n")[0][:200]
        body = d["content"]
        if body.startswith(description):
            body = body[len(description):].strip()
        target = folder / name
        target.mkdir(parents=True, exist_ok=True)
        (target / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n\n{body}\n",
            encoding="utf-8")
    return len(skills)

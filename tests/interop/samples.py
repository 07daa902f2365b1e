"""Small inputs in each peer's shape, written for these tests."""

from __future__ import annotations

import json
from pathlib import Path

GRAPH = [
    {"type": "entity", "name": "Rosa_Diaz", "entityType": "person",
     "observations": ["Reviews pull requests on Tuesdays", "Prefers squash merges",
                      "Wrote the \"ledger\" module\nin 2023"]},
    {"type": "relation", "from": "Rosa_Diaz", "to": "Ledger", "relationType": "owns"},
    {"type": "entity", "name": "Ledger", "entityType": "module", "observations": []},
    {"type": "relation", "from": "Ledger", "to": "Postgres", "relationType": "depends_on"},
]

MEM0 = {"results": [
    {"id": "5f0c7d2a-0000-4000-8000-000000000001", "memory": "Drinks oat milk lattes",
     "hash": "9a1b", "metadata": {"category": "preferences", "channel": "chat"},
     "categories": ["food"], "created_at": "2024-11-02T09:15:00-07:00",
     "updated_at": "2024-11-03T09:15:00-07:00", "user_id": "sam.o@example.org"},
    {"id": "5f0c7d2a-0000-4000-8000-000000000002", "memory": "Deploys only on weekdays",
     "metadata": None, "created_at": "2024-11-04T09:15:00-07:00", "updated_at": None,
     "user_id": "lin", "agent_id": "ops-bot", "run_id": "r-7"},
    {"id": "5f0c7d2a-0000-4000-8000-000000000003", "memory": "Knows the on-call rota",
     "agent_id": "ops-bot", "created_at": "2024-11-05T09:15:00Z"},
], "total": 3}

NOTE = """---
title: Release Process
type: process
tags: [release, ci]
permalink: release-process
---

# Release Process

How a version goes out.
Two people sign off.

## Steps
Tag first, then build.

## Observations
- [fact] Releases are cut from main #release
- [decision] Wheels are built in CI (not locally)
- [ ] an open task, which is prose
- [x] a done task

## Relations
- part_of [[Engineering Handbook]]
- uses [[CI Pipeline]] (GitHub Actions)
"""

NOTE_PLAIN = """# CI Pipeline

- [tech] Runs on two cores
- feeds [[Release Process]]
"""

CLAUDE = """# Guide

Read @docs/style.md first; never @../secrets.md.

## Tests
- Run the suite with `-n 0`
- No sleeps in tests;
  follow events instead.

```sh
make check
```
"""
STYLE = """# Style
- Type hints everywhere
- See @../CLAUDE.md again
"""
NESTED = """## Service rules
- Errors are JSON
"""
RULE = """---
description: Python style
globs: *.py
alwaysApply: false
---

- Prefer pathlib
- Small modules
"""
ALWAYS = """---
description: Always on
globs:
alwaysApply: true
---
Answer briefly.
"""
COPILOT = """Write British English.

- Use uv, not pip
"""
BANK = {"projectbrief.md": "# Brief\nA context store for agents.\n",
        "systemPatterns.md": "# Patterns\n- State changes are events\n- Ids never reused\n",
        "activeContext.md": "# Now\nBuilding the importer.\n"}


def write_graph(path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in GRAPH))
    return path


def write_mem0(path: Path) -> Path:
    path.write_text(json.dumps(MEM0, indent=1))
    return path


def write_notes(root: Path) -> Path:
    (root / "eng").mkdir(parents=True)
    (root / "release.md").write_text(NOTE)
    (root / "eng" / "ci.md").write_text(NOTE_PLAIN)
    return root


def write_repo(root: Path) -> Path:
    for rel, text in {"CLAUDE.md": CLAUDE, "docs/style.md": STYLE, "api/CLAUDE.md": NESTED,
                      "AGENTS.md": CLAUDE.replace("# Guide", "# Agents"),
                      "api/AGENTS.md": NESTED,
                      ".cursor/rules/python.mdc": RULE, ".cursor/rules/always.mdc": ALWAYS,
                      ".github/copilot-instructions.md": COPILOT,
                      **{f"memory-bank/{k}": v for k, v in BANK.items()}}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root.parent / "secrets.md").write_text("- outside the root\n")
    return root

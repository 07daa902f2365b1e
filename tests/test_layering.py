"""Imports go one way: adapters -> domain -> engines -> store -> format (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sediment

SRC = Path(sediment.__file__).parent

RANK = {"format": 0, "store": 1, "auth": 2, "embed": 2, "search": 2, "credentials": 2,
        "ingest": 3, "review": 3, "kcp": 4, "memory": 4, "context": 4, "agents": 4, "ops": 5,
        "pg": 5, "workspace": 5.5, "server": 6,
        "interop": 6, "cli": 7, "_api": 7}
ASIDE = {"errors", "config", "__init__", "__main__", "py"}


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "sediment" else None


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return out


def test_imports_follow_the_layering() -> None:
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        own = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        if own in ASIDE:
            continue
        assert own in RANK, f"{rel}: add its package to RANK in this test"
        for target in _imports(path):
            pkg = _package(target)
            if pkg is None or pkg == own:
                continue
            if pkg == "config" and RANK[own] < RANK["cli"]:
                problems.append(f"{rel} reads configuration; only adapters may")
            elif pkg in RANK and RANK[pkg] > RANK[own]:
                problems.append(f"{rel} imports {target} (a higher layer)")
            elif pkg in RANK and RANK[pkg] == RANK[own] and pkg != own:
                problems.append(f"{rel} imports {target} (a sibling at the same level)")
    assert problems == []


@pytest.mark.parametrize("module", ["sediment", "sediment.format", "sediment.store",
                                    "sediment.embed", "sediment.search", "sediment.ingest",
                                    "sediment.ops", "sediment.ops.requests",
                                    "sediment.server", "sediment.server.web",
                                    "sediment.errors", "sediment.memory",
                                    "sediment.credentials", "sediment.auth",
                                    "sediment.context", "sediment.agents",
                                    "sediment.pg", "sediment.interop"])
def test_all_is_complete(module: str) -> None:
    import importlib

    mod = importlib.import_module(module)
    exported = set(mod.__all__)
    public = {n for n, v in vars(mod).items()
              if not n.startswith("_") and getattr(v, "__module__", "").startswith("sediment")
              and not isinstance(v, type(sediment))}
    assert public <= exported, f"public names missing from __all__: {public - exported}"
    for name in exported:
        assert hasattr(mod, name), f"{module}.__all__ names {name}, which does not exist"

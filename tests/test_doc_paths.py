"""Every file a docstring or comment in ``src/`` points at exists in the repository.

A reference to a moved or deleted file sends the reader nowhere; only docstrings and
comments are read (a path inside an error message or an example is data, not a pointer).
A root page (``README.md``) and paths under ``docs/``, ``tests/`` and ``bench/`` are
read from the repository's root; a module path such as ``store/ids.py`` from
``src/sediment``.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "sediment"
ROOTED = re.compile(
    r"(?<![\w./\"-])((?:docs|tests|bench)/[\w./-]*\w\.(?:md|py|toml|jsonl|json|sql))\b(?!\")")
"""A path in double quotes is a value in an example (a JSON sample), not a pointer."""
ROOT_PAGE = re.compile(r"(?<![\w./\"-])([A-Z][A-Z_-]+\.md)\b(?!\")")
PROJECT_FILES = {"AGENTS.md", "CLAUDE.md", "SKILL.md", "GEMINI.md"}
"""Names of the instruction files Sediment reads in a user's project, not this repository's."""
MODULE = re.compile(r"(?<![\w./\"-])((?:[a-z_]+/)+[a-z_0-9]+\.py)\b(?!\")")


def _texts(path: Path) -> list[tuple[int, str]]:
    source = path.read_text(encoding="utf-8")
    out = [(tok.start[0], tok.string)
           for tok in tokenize.generate_tokens(io.StringIO(source).readline)
           if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            out.append((node.lineno, node.value.value))
    return out


def _missing() -> list[str]:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        for line, text in _texts(path):
            for ref in ROOTED.findall(text):
                if not (ROOT / ref).exists():
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {ref}")
            for ref in ROOT_PAGE.findall(text):
                if ref not in PROJECT_FILES and not (ROOT / ref).exists():
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {ref}")
            for ref in MODULE.findall(text):
                if ref.startswith(("docs/", "tests/", "bench/", "src/")):
                    continue
                if not (SRC / ref).exists():
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {ref}")
    return bad


def test_every_file_a_docstring_or_comment_names_exists() -> None:
    assert _missing() == []


def test_the_check_finds_a_missing_file(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""See docs/no-such-page.md and store/no_such.py."""\n# tests/x/y.py\n')
    texts = " ".join(t for _, t in _texts(module))
    assert sorted(ROOTED.findall(texts)) == ["docs/no-such-page.md", "tests/x/y.py"]
    assert sorted(MODULE.findall(texts)) == ["store/no_such.py", "tests/x/y.py"]
    assert ROOT_PAGE.findall("as DESIGN.md says, like AGENTS.md") == ["DESIGN.md", "AGENTS.md"]
    assert ROOTED.findall('{"path": "docs/guide.md"} bench/data/p.jsonl') == [
        "bench/data/p.jsonl"]

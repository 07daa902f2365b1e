"""``sediment context ...`` through the real command, and skills import/export round
trips on files these tests write in the public formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sediment.context.skills import (
    read_ace,
    read_agent_skills,
    write_ace,
    write_agent_skills,
)
from tests.context.conftest import BACKENDS, make_loop


def _json(run: Any) -> Any:
    assert run.code == 0, run.err
    return json.loads(run.out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cli_loop(sediment: Any, tmp_path: Path, backend: str,
                  request: pytest.FixtureRequest) -> None:
    where = ["--dir", str(tmp_path)] if backend == "files" else \
        ["--store", request.getfixturevalue("pg_url")]
    sediment("context", "store", "Always pin the toolchain version.", "--type", "skill",
             "--tag", "build", *where)
    for i in range(1, 4):
        sediment("context", "iteration", str(i), f"Built target {i}.", *where)
    failed = _json(sediment("context", "iteration", "4", "Linker failed.", "--failed",
                            "--error", "undefined reference to main", "--json",
                            *where))
    got = _json(sediment("context", "relevant", "linker undefined reference", "--min-score",
                         "0", "--json", *where))
    assert got["items"][0]["id"] == failed["error_id"]
    block = sediment("context", "inject", "linker undefined reference", "--max-tokens", "60",
                     "--min-score", "0", *where)
    assert block.code == 0 and block.out.startswith(
        "## Relevant Context from Previous Iterations")
    assert "### [ERROR]" in block.out
    marked = _json(sediment("context", "mark", failed["error_id"], "--helpful", "--json",
                            *where))
    assert marked["usefulness"] == 0.6
    stats = _json(sediment("context", "stats", "--json", *where))
    assert stats["by_type"] == {"skill": 1, "iteration": 4, "error": 1}
    history = _json(sediment("context", "history", "--last", "2", "--json",
                             *where))
    assert [h["iteration"] for h in history["iterations"]] == [4, 3]
    bad = sediment("context", "mark", "c999", "--helpful", *where)
    assert bad.code == 1 and bad.err.startswith("Error:")
    other = _json(sediment("context", "stats", "--json", *where,
                           env={"SEDIMENT_ACTOR": "someone-else"}))
    assert other["total"] == 0  # each actor's context is their own, on either backend


def test_config_prints_values_and_origins(sediment: Any, tmp_path: Path) -> None:
    (tmp_path / "sediment.toml").write_text('[context]\npreset = "minimal"\n'
                                            "recency_weight = 0.3\n")
    out = _json(sediment("context", "config", "--json", cwd=tmp_path))["settings"]
    assert out["max_items_per_query"]["value"] == 5
    assert out["max_items_per_query"]["from"].startswith("preset minimal")
    assert out["recency_weight"] == {"value": 0.3, "from": str(tmp_path / "sediment.toml")}
    assert out["semantic_weight"]["from"] == "default (standard)"
    text = sediment("context", "config", cwd=tmp_path)
    assert "persistence = 'session'" in text.out


def test_ace_round_trip(tmp_path: Path) -> None:
    book = {"skills": {
        "testing-00001": {"id": "testing-00001", "section": "testing",
                          "content": "Run the slow tests before a release.",
                          "justification": "A release broke once.", "evidence": "ci log",
                          "status": "active", "sources": ["run-3"],
                          "created_at": "2026-01-01T00:00:00Z",
                          "updated_at": "2026-01-02T00:00:00Z"},
        "testing-00002": {"id": "testing-00002", "section": "testing",
                          "content": "Skip tests on Fridays.", "status": "invalid"}},
        "sections": {"testing": ["testing-00001", "testing-00002"]}}
    src = tmp_path / "skillbook.json"
    src.write_text(json.dumps(book))
    loop = make_loop(tmp_path)
    assert loop.import_skills("al", read_ace(src))["imported"] == 1
    skills = loop.get_skills("al", ["testing"], 0.0)["skills"]
    assert [s["content"] for s in skills] == ["Run the slow tests before a release."]
    out = tmp_path / "out.json"
    write_ace(out, skills)
    back = json.loads(out.read_text())
    assert back["skills"]["testing-00001"] == book["skills"]["testing-00001"]
    assert back["sections"] == {"testing": ["testing-00001"]}


def test_agent_skills_round_trip(tmp_path: Path) -> None:
    folder = tmp_path / "skills"
    (folder / "pdf-forms").mkdir(parents=True)
    (folder / "pdf-forms" / "SKILL.md").write_text(
        "---\nname: pdf-forms\ndescription: Fill PDF forms: read fields first.\n---\n\n"
        "# PDF forms\n\nList the fields, then fill them.\n")
    loop = make_loop(tmp_path)
    loop.import_skills("al", read_agent_skills(folder))
    skills = loop.get_skills("al", None, 0.0)["skills"]
    assert skills[0]["tags"] == ["agent-skill"]
    out = tmp_path / "exported"
    write_agent_skills(out, skills)
    again = read_agent_skills(out)
    assert [(s.content, s.metadata) for s in again] == [
        (skills[0]["content"], {"name": "pdf-forms",
                                "description": "Fill PDF forms: read fields first."})]

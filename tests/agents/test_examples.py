"""The three personas of docs/personas.md resolve against a compiled example project,
through the real ``sediment agent`` command."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.project import write_project
from tests.conftest import Runner


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "acme")


def test_agent_list_shows_the_three_examples(project: Path, sediment: Runner) -> None:
    r = sediment("agent", "list", "--json", cwd=project)
    assert r.code == 0, r.err
    agents = {a["name"]: a for a in r.json()["agents"]}
    assert set(agents) == {"code-reviewer", "onboarding", "incident-responder"}
    assert {a["source"] for a in agents.values()} == {"lua"}
    assert agents["onboarding"]["tools"] == ["agents_search", "search_knowledge"]
    assert agents["incident-responder"]["arguments"][0] == {
        "name": "service", "description": "The service in trouble", "required": True}


def test_code_reviewer_pre_searches_conventions(project: Path, sediment: Runner) -> None:
    r = sediment("agent", "test", "code-reviewer", "--arg", "area=errors", "--json",
                 cwd=project)
    assert r.code == 0, r.err
    out = r.json()
    assert "raise a SedimentError subclass" in out["system"]
    assert "(docs/conventions.md:" in out["system"]
    assert out["searches"] == 1 and out["tools"] == ["agents_search"]
    assert out["messages"] == [{"role": "assistant",
                                "content": "I have 4 conventions at hand. Paste the change."}]


def test_onboarding_lists_the_kcp_units(project: Path, sediment: Runner) -> None:
    r = sediment("agent", "test", "onboarding", "--json", cwd=project)
    assert r.code == 0, r.err
    system = r.json()["system"]
    assert "How do I set up a development machine? (docs/setup.md:1)" in system
    assert "How is the code organised? (docs/architecture.md:1)" in system
    assert "Install Python" not in system, "only kcp.intent chunks are listed"


def test_incident_responder_loads_runbooks(project: Path, sediment: Runner) -> None:
    r = sediment("agent", "test", "incident-responder", "--arg", "service=payments-api",
                 "--arg", "severity=P1", cwd=project)
    assert r.code == 0, r.err
    assert "Source: lua (" in r.out and "incident-responder.lua)" in r.out
    assert "You are the incident responder for payments-api (P1)" in r.out
    assert "restart the payments worker" in r.out
    assert "(1 searches, 2 document fetches)" in r.out


def test_incident_responder_needs_its_service(project: Path, sediment: Runner) -> None:
    r = sediment("agent", "test", "incident-responder", cwd=project)
    assert r.code == 1
    assert r.err.strip() == "Error: persona incident-responder: argument service is required"

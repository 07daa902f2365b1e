"""Personas through a client nobody here wrote: the MCP Inspector CLI's prompts/list and
prompts/get against the real HTTP server (installed by ``./run test``)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.project import write_project
from tests.mcp.conftest import TOKEN, start_http, stop
from tests.mcp.test_inspector import INSPECTOR


@pytest.fixture
def inspector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    if not INSPECTOR.exists():
        pytest.fail(f"{INSPECTOR} is missing: `./run test` installs the MCP Inspector")
    project = write_project(tmp_path / "acme")
    monkeypatch.setenv("SEDIMENT_CONFIG", str(project / "sediment.toml"))
    server = start_http(project, "--no-warm-up")

    def call(*args: str, code: int = 0) -> Any:
        p = subprocess.run(
            [str(INSPECTOR), "--cli", server.url, "--transport", "http",
             "--header", f"Authorization: Bearer {TOKEN}", *args],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
            env={**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")})
        assert p.returncode == code, p.stderr or p.stdout
        return json.loads(p.stdout) if code == 0 else p.stderr + p.stdout

    try:
        yield call
        assert server.process.poll() is None, "the server died during the Inspector's calls"
    finally:
        stop(server.process)


def test_inspector_lists_and_resolves_personas(inspector: Any) -> None:
    prompts = {p["name"]: p for p in inspector("--method", "prompts/list")["prompts"]}
    assert set(prompts) - {"memory_guidelines"} == {"code-reviewer", "onboarding",
                                                    "incident-responder"}
    assert prompts["incident-responder"]["arguments"][0] == {
        "name": "service", "description": "The service in trouble", "required": True}
    got = inspector("--method", "prompts/get", "--prompt-name", "incident-responder",
                    "--prompt-args", "service=payments-api", "severity=P1")
    first, second = got["messages"]
    assert first["role"] == "user"
    assert first["content"]["text"].startswith("[System instructions for this conversation]"
                                               "\nYou are the incident responder for "
                                               "payments-api (P1)")
    assert second["role"] == "assistant"
    failed = inspector("--method", "prompts/get", "--prompt-name", "incident-responder",
                       code=1)
    assert "argument service is required" in failed

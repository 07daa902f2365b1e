"""Fixtures for the embedding tests: a real local HTTP server and a subprocess environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .fake_http import FakeServer

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    srv = FakeServer()
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """Environment for child Pythons that must import sediment from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    return env

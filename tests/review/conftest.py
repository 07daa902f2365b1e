"""Fixtures for the review workflow: the real ``sediment`` command, and small layer sets."""

from __future__ import annotations

from tests.cli.conftest import sediment

__all__ = ["sediment"]

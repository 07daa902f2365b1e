"""The CLI tests use the ``sediment`` fixture defined in tests/conftest.py."""

from tests.conftest import SEDIMENT, Run, Runner

__all__ = ["SEDIMENT", "Run", "Runner"]

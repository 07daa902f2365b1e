"""The real ``sediment`` console script fixture, shared with the CLI tests."""

from tests.cli.conftest import sediment  # noqa: F401  (a fixture)

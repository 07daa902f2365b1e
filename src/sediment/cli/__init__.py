"""The ``sediment`` command line: a thin adapter over the library's services."""

from sediment.cli import _kcp, _read, _review, _serve, _write  # noqa: F401  (registers commands)
from sediment.cli._app import cli


def main() -> None:
    cli(prog_name="sediment")


__all__ = ["cli", "main"]

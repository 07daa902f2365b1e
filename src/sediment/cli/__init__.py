"""The ``sediment`` command line: a thin adapter over the library's services."""

# Importing the command modules registers their commands on the group.
from sediment.cli import _agent, _index, _kcp, _read, _review, _serve, _write  # noqa: F401
from sediment.cli._app import cli


def main() -> None:
    cli(prog_name="sediment")


__all__ = ["cli", "main"]

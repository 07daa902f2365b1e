"""The ``sediment`` command line: a thin adapter over the library's services.

One module per command or family of commands (``_compile``, ``_read`` for search,
``_layers`` for inspect/validate/layers, ...); shared options in ``_options``, everything
printed in ``_output``, ``_hits`` and ``_progress``.
"""

# Importing the command modules registers their commands on the group.
from sediment.cli import (  # noqa: F401
    _agent,
    _compile,
    _context,
    _db,
    _diff,
    _export,
    _index,
    _init,
    _kcp,
    _layers,
    _memory,
    _promote,
    _proposals,
    _read,
    _serve,
    _sign,
    _sync,
    _token,
    _transfer,
    _ui,
    _write,
)
from sediment.cli._app import cli


def main() -> None:
    cli(prog_name="sediment")


__all__ = ["cli", "main"]

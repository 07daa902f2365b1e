"""The ``sediment`` command line: a thin adapter over the library's services.

One module per command or family of commands (``_compile``, ``_read`` for search,
``_layers`` for inspect/validate/layers, ...); shared options in ``_options``, everything
printed in ``_output``, ``_hits`` and ``_progress``. A module registers its commands on the
group when imported, and it is imported only when one of its commands runs: list a new
module's commands in ``COMMANDS`` (a test checks that every command module is there).
"""

from sediment.cli._app import cli

COMMANDS = {name: f"sediment.cli.{module}" for module, names in {
    "_agent": ("agent",),
    "_compile": ("compile",),
    "_context": ("context",),
    "_db": ("db",),
    "_diff": ("diff",),
    "_export": ("export", "import"),
    "_index": ("index",),
    "_init": ("init",),
    "_kcp": ("kcp",),
    "_layers": ("inspect", "validate", "layers"),
    "_memory": ("memory",),
    "_merge": ("merge-driver",),
    "_projects": ("projects",),
    "_promote": ("promote", "compact"),
    "_proposals": ("proposals",),
    "_read": ("search",),
    "_serve": ("serve",),
    "_sign": ("keygen", "sign", "verify"),
    "_sync": ("sync",),
    "_token": ("token",),
    "_transfer": ("push", "pull"),
    "_ui": ("ui",),
    "_write": ("write", "propose", "forget"),
}.items() for name in names}
"""Which module registers each top-level command."""
MODULES = tuple(dict.fromkeys(COMMANDS.values()))
"""Every command module, imported when all commands are listed (``--help``)."""

cli.load_lazily(COMMANDS, MODULES)


def main() -> None:
    cli(prog_name="sediment")


__all__ = ["COMMANDS", "MODULES", "cli", "main"]

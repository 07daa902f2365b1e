"""The ``sediment`` command line: a thin adapter over the library's services.

One module per command or family of commands (``_compile``, ``_read`` for search,
``_layers`` for inspect/validate/layers, ...); shared options in ``_options``, everything
printed in ``_output``, ``_hits`` and ``_progress``. A module registers its commands on the
group when imported, and it is imported only when one of its commands runs: list a new
module in ``MODULES`` and its commands in ``COMMANDS`` (a test checks both).
"""

from sediment.cli._app import cli

MODULES = tuple(f"sediment.cli.{m}" for m in (
    "_agent", "_compile", "_context", "_db", "_diff", "_export", "_index", "_init", "_kcp",
    "_layers", "_memory", "_merge", "_projects", "_promote", "_proposals", "_read", "_serve",
    "_sign", "_sync", "_token", "_transfer", "_ui", "_write",
))

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

cli.load_lazily(COMMANDS, MODULES)


def main() -> None:
    cli(prog_name="sediment")


__all__ = ["COMMANDS", "MODULES", "cli", "main"]

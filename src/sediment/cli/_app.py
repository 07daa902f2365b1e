"""The ``sediment`` command group and its one error handler.

Exit codes: 0 success, 1 a user error (any ``SedimentError``: bad input, bad file, missing
file), 2 a usage error (click's own), 70 an internal failure (a bug: the message says to
re-run with ``--debug`` for the traceback). Every command also takes ``-q/--quiet`` (no
progress, notes or warnings on stderr; errors still print) and ``-v/--verbose`` (what was
chosen and why, and the library's log on stderr).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from typing import Any

import click

from sediment import __version__
from sediment.cli._output import visible
from sediment.errors import SedimentError

EXIT_USAGE = 2
EXIT_INTERNAL = 70


def _set_verbosity(level: int) -> Any:
    def callback(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if not value:
            return
        ctx.meta["sediment.verbosity"] = level
        if level > 0:
            logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
            logging.getLogger("sediment").setLevel(logging.INFO)
    return callback


def verbosity_options() -> list[click.Option]:
    return [
        click.Option(["-q", "--quiet"], is_flag=True, expose_value=False, is_eager=True,
                     callback=_set_verbosity(-1),
                     help="Print only results and errors: no progress, notes or warnings."),
        click.Option(["-v", "--verbose"], is_flag=True, expose_value=False, is_eager=True,
                     callback=_set_verbosity(1),
                     help="Also say what was chosen and why (embedder, files), on stderr."),
    ]


class SedimentGroup(click.Group):
    """Maps errors to messages and exit codes in one place for every command, and gives
    every command of the tree the --quiet and --verbose options.

    The root group imports a command's module only when that command runs (see
    :meth:`load_lazily`): every ``sediment`` process, and so every agent hook and test that
    starts one, pays for its own command's imports, not for the MCP SDK and the server."""

    group_class = type  # subgroups are SedimentGroups too
    _lazy: Mapping[str, str] = {}
    _modules: tuple[str, ...] = ()

    def load_lazily(self, commands: Mapping[str, str], modules: tuple[str, ...]) -> None:
        """Each name in ``commands`` is registered by the module it maps to; ``modules``
        are every command module, imported when all commands are listed (``--help``). A
        name not in ``commands`` is no command: importing every module to look for it cost
        a mistyped command 2 s (tests/cli/test_lazy_commands.py keeps the table whole)."""
        self._lazy = commands
        self._modules = modules

    def _load_all(self) -> None:
        for module in self._modules:
            importlib.import_module(module)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self._lazy:
            importlib.import_module(self._lazy[cmd_name])
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_all()
        return super().list_commands(ctx)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        if not isinstance(cmd, click.Group):
            have = {o for p in cmd.params for o in getattr(p, "opts", [])}
            cmd.params.extend(o for o in verbosity_options() if not set(o.opts) & have)
        super().add_command(cmd, name)

    def invoke(self, ctx: click.Context) -> Any:
        if ctx.parent is not None:
            return super().invoke(ctx)
        debug = bool(ctx.params.get("debug"))
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except SedimentError as exc:
            if debug:
                raise
            click.echo(f"Error: {visible(str(exc))}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            ctx.exit(0)
        except Exception as exc:
            if debug:
                raise
            click.echo(f"Internal error: {type(exc).__name__}: {visible(str(exc))}\n"
                       "This is a bug in Sediment; re-run with --debug for the traceback.",
                       err=True)
            ctx.exit(EXIT_INTERNAL)


@click.group(cls=SedimentGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sediment")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Sediment: a layered context store and memory server for AI agents.

    Knowledge settles in layers (RFC AGENTS.db): an immutable base (AGENTS.db), and
    append-only user, delta and local layers above it, searched together with hybrid
    vector + keyword retrieval.
    """
    ctx.ensure_object(dict)

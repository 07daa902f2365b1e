"""The ``sediment`` command group, its one error handler and the options commands share.

Exit codes: 0 success, 1 a user error (any ``SedimentError``: bad input, bad file, missing
file), 2 a usage error (click's own), 70 an internal failure (a bug: the message says to
re-run with ``--debug`` for the traceback).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from sediment import __version__
from sediment.config import Config, load_config
from sediment.errors import SedimentError
from sediment.store import LayerName, LayerSet

EXIT_USER = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70

F = TypeVar("F", bound=Callable[..., Any])


class SedimentGroup(click.Group):
    """Maps errors to messages and exit codes in one place for every command."""

    def invoke(self, ctx: click.Context) -> Any:
        debug = bool(ctx.params.get("debug"))
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except SedimentError as exc:
            if debug:
                raise
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(EXIT_USER)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            ctx.exit(0)
        except Exception as exc:
            if debug:
                raise
            click.echo(f"Internal error: {type(exc).__name__}: {exc}\n"
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


def get_config(ctx: click.Context) -> Config:
    obj = ctx.ensure_object(dict)
    if "config" not in obj:
        obj["config"] = load_config()
    cfg: Config = obj["config"]
    return cfg


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True,
                        help="Print machine-readable JSON instead of text.")(f)


def layer_options(f: F) -> F:
    """--dir plus one explicit path option per layer (any may be omitted)."""
    for name in reversed(list(LayerName)):
        f = click.option(f"--{name.value}", f"{name.value}_path", type=click.Path(path_type=Path),
                         default=None,
                         help=f"Path of the {name.value} layer (default DIR/{name.file_name}).")(f)
    return click.option("--dir", "layer_dir", type=click.Path(path_type=Path), default=None,
                        help="Directory holding the standard layer files (default: the "
                             "project root, or SEDIMENT_DIR).")(f)


def open_layerset(cfg: Config, layer_dir: Path | None, **paths: Path | None) -> LayerSet:
    directory = layer_dir or cfg.layer_dir
    chosen: dict[LayerName | str, Path | None] = {n: directory / n.file_name for n in LayerName}
    for name in LayerName:
        explicit = paths.get(f"{name.value}_path")
        if explicit is not None:
            chosen[name] = explicit
    return LayerSet(chosen)


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def is_terminal() -> bool:
    return sys.stderr.isatty()

"""``sediment projects list``: the projects of a PostgreSQL store, to find the name a
``?project=`` should say."""

from __future__ import annotations

import click

from sediment.cli._app import cli
from sediment.cli._db import _required_store
from sediment.cli._options import json_option, store_option
from sediment.cli._output import emit_json
from sediment.pg import connect, parse_store_url
from sediment.pg.projects import project_names


@cli.group()
def projects() -> None:
    """The projects of a PostgreSQL store (``?project=`` in a store URL names one)."""


@projects.command(name="list")
@store_option
@json_option
def list_cmd(store: str | None, as_json: bool) -> None:
    """List the store's projects: those with layers, memories or context items."""
    url = parse_store_url(_required_store(store))
    with connect(url) as conn:
        names = project_names(conn)
    if as_json:
        emit_json({"store": url.redacted, "projects": names})
        return
    if not names:
        click.echo("no projects yet (sediment push creates one)")
    for name in names:
        click.echo(name)

"""``sediment db ...``: the PostgreSQL store's schema (``migrate``, ``status``)."""

from __future__ import annotations

import click

from sediment.cli._app import cli
from sediment.cli._options import get_config, json_option, store_option
from sediment.cli._output import emit_json
from sediment.config import store_url
from sediment.errors import ConfigError
from sediment.pg import connect, current_version, latest_version, migrate, parse_store_url

STATUS_EXIT = {"behind": 3, "ahead": 4}
"""``db status``'s exit code when the schema is not the one this Sediment needs."""


def _required_store(option: str | None) -> str:
    url = store_url(get_config(click.get_current_context()), option)
    if url is None:
        raise ConfigError("no store: give --store postgresql://host/database, set "
                          "SEDIMENT_STORE, or put store = \"postgresql://...\" in sediment.toml")
    return url


@cli.group()
def db() -> None:
    """The PostgreSQL store's schema: apply migrations, show the version."""


@db.command(name="migrate")
@store_option
@json_option
def migrate_cmd(store: str | None, as_json: bool) -> None:
    """Bring the database's schema up to date (safe to run again, and from two places at
    once: the second waits and finds nothing to do)."""
    url = parse_store_url(_required_store(store))
    with connect(url, statement_timeout_ms=0) as conn:
        applied = migrate(conn)
        version = current_version(conn)
    if as_json:
        emit_json({"store": url.redacted, "version": version,
                   "applied": [f"{m.version:04d}_{m.name}" for m in applied]})
        return
    for m in applied:
        click.echo(f"applied {m.version:04d}_{m.name}")
    click.echo(f"schema at version {version}" + ("" if applied else " (already current)"))


@db.command(name="status")
@store_option
@json_option
def status_cmd(store: str | None, as_json: bool) -> None:
    """Show the database's schema version and the version this Sediment needs. Exits 0
    when they match, 3 when the schema is behind (run `sediment db migrate`), 4 when it is
    newer than this Sediment (upgrade Sediment): a deploy can gate on it."""
    url = parse_store_url(_required_store(store))
    with connect(url) as conn:
        version = current_version(conn)
    latest = latest_version()
    state = "current" if version == latest else "behind" if version < latest else "ahead"
    if as_json:
        emit_json({"store": url.redacted, "version": version, "latest": latest,
                   "state": state})
    else:
        say = {"current": "current", "behind": "needs `sediment db migrate`",
               "ahead": "newer than this Sediment: upgrade Sediment"}[state]
        click.echo(f"schema at version {version} of {latest} ({say})")
    if state != "current":
        click.get_current_context().exit(STATUS_EXIT[state])

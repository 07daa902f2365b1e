"""``sediment token ...``: bearer tokens that bind HTTP clients to actors, kept in the
user's token file, or with ``--store`` (SEDIMENT_STORE, sediment.toml) in the team
server's database."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import click

from sediment.auth import ROLES, TokenStore
from sediment.cli._app import cli
from sediment.cli._options import get_config, json_option, own_actor, store_option
from sediment.cli._output import emit_json
from sediment.config import store_url, tokens_file


@contextmanager
def _tokens(store: str | None) -> Iterator[Any]:
    """The token file, or the database token store of the store URL that resolves."""
    cfg = get_config(click.get_current_context())
    url = store_url(cfg, store)
    if url is None:
        yield TokenStore(tokens_file(cfg.env))
        return
    from sediment.pg.database import Database
    from sediment.pg.tokens import PgTokenStore

    db = Database(url, size=1)
    try:
        yield PgTokenStore(db)
    finally:
        db.close()


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def duration_ms(text: str) -> int:
    """``30d`` and the like, in milliseconds."""
    m = re.fullmatch(r"\s*([0-9]{1,6})\s*([smhdw])\s*", text)
    if m is None or int(m.group(1)) == 0:
        raise click.BadParameter(f"{text!r} is not a duration: give a number and s, m, h, d "
                                 "or w, e.g. 12h or 30d", param_hint="--expires")
    return int(m.group(1)) * _UNITS[m.group(2)] * 1000


def _when(ms: int) -> str:
    """``ms`` (epoch milliseconds) in ISO 8601, UTC, to the second."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@cli.group()
def token() -> None:
    """Create, list and revoke the bearer tokens of the HTTP server (stored hashed in the
    user configuration directory, or with --store in the team server's database; once one
    exists, every HTTP request needs one, and a running server keeps needing one even after
    the last is revoked; a team server always needs one)."""


@token.command(name="create")
@click.option("--actor", required=True, help="The actor the token acts as.")
@click.option("--role", type=click.Choice(ROLES), default="writer", show_default=True,
              help="reader: search and recall; writer: also write, propose and save "
                   "memories and context; reviewer: also review and write global memories; "
                   "admin: also manage tokens.")
@click.option("--expires", "expires", default=None, metavar="DURATION",
              help="Stop working after this long: a number and s, m, h, d or w (e.g. 30d; "
                   "default: never, until revoked).")
@click.option("--project", default=None, metavar="NAME",
              help="With --store: the token works for this project only (default: every "
                   "project of the database).")
@store_option
@json_option
def create_cmd(actor: str, role: str, expires: str | None, project: str | None,
               store: str | None, as_json: bool) -> None:
    """Mint a token; it is printed once and cannot be shown again."""
    lasting = None if expires is None else duration_ms(expires)
    with _tokens(store) as tokens:
        until = None if lasting is None else int(time.time() * 1000) + lasting
        if isinstance(tokens, TokenStore):
            if project is not None:
                raise click.UsageError("--project scopes a team server's token: give --store "
                                       "(a token file serves one server's one store)")
            secret, info = tokens.create(actor, role, until)
        else:
            if project is not None:
                _existing_project(tokens, project)
            secret, info = tokens.create(actor, role, until, created_by=own_actor(),
                                         project=project)
    if as_json:
        emit_json({**info.to_dict(), "token": secret})
        return
    click.echo(secret)
    lasts = "" if info.expires_at_ms is None else f", until {_when(info.expires_at_ms)}"
    scope = "" if info.project is None else f", project {info.project} only"
    click.echo(f"token {info.id} for actor {info.actor} ({info.role}{scope}{lasts}); store it "
               "now: it is not shown again", err=True)


def _existing_project(tokens: Any, project: str) -> None:
    from sediment.pg.connection import check_project
    from sediment.pg.projects import require_project

    with tokens.db.connection() as conn:
        require_project(conn, check_project(project), tokens.db.url.redacted)


@token.command(name="list")
@store_option
@json_option
def list_cmd(store: str | None, as_json: bool) -> None:
    """List tokens (ids, actors, roles; never the tokens themselves)."""
    with _tokens(store) as tokens:
        rows = [t.to_dict() for t in tokens.list()]
    if as_json:
        emit_json({"tokens": rows})
        return
    if not rows:
        click.echo("no tokens")
    for r in rows:
        ends = r.get("expires_at_ms")
        lasts = "" if ends is None else \
            f"  {'expired' if ends <= time.time() * 1000 else 'expires'} {_when(ends)}"
        scope = f"  project {r['project']}" if r.get("project") is not None else ""
        click.echo(f"{r['id']}  {r['actor']}  {r['role']}{scope}  created "
                   f"{_when(r['created_at_ms'])}{lasts}")


@token.command(name="revoke")
@click.argument("token_id")
@store_option
@json_option
def revoke_cmd(token_id: str, store: str | None, as_json: bool) -> None:
    """Revoke a token by its id (see token list); over a store, at once on every server."""
    with _tokens(store) as tokens:
        info = tokens.revoke(token_id)
    if as_json:
        emit_json({"revoked": info.to_dict()})
    else:
        click.echo(f"revoked token {info.id} of actor {info.actor}")

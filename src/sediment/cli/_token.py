"""``sediment token ...``: bearer tokens that bind HTTP clients to actors."""

from __future__ import annotations

import click

from sediment.auth import ROLES, TokenStore
from sediment.cli._app import cli
from sediment.cli._options import json_option
from sediment.cli._output import emit_json
from sediment.server.principals import token_path


@cli.group()
def token() -> None:
    """Create, list and revoke the bearer tokens of the HTTP server (stored hashed in the
    user configuration directory; once one exists, every HTTP request needs one)."""


@token.command(name="create")
@click.option("--actor", required=True, help="The actor the token acts as.")
@click.option("--role", type=click.Choice(ROLES), default="writer", show_default=True,
              help="reader: search and recall; writer: also write and save memories; "
                   "reviewer, admin: more.")
@json_option
def create_cmd(actor: str, role: str, as_json: bool) -> None:
    """Mint a token; it is printed once and cannot be shown again."""
    secret, info = TokenStore(token_path()).create(actor, role)
    if as_json:
        emit_json({**info.to_dict(), "token": secret})
        return
    click.echo(secret)
    click.echo(f"token {info.id} for actor {info.actor} ({info.role}); store it now: it is "
               "not shown again", err=True)


@token.command(name="list")
@json_option
def list_cmd(as_json: bool) -> None:
    """List tokens (ids, actors, roles; never the tokens themselves)."""
    rows = [t.to_dict() for t in TokenStore(token_path()).list()]
    if as_json:
        emit_json({"tokens": rows})
        return
    if not rows:
        click.echo("no tokens")
    for r in rows:
        click.echo(f"{r['id']}  {r['actor']}  {r['role']}  created {r['created_at_ms']}")


@token.command(name="revoke")
@click.argument("token_id")
@json_option
def revoke_cmd(token_id: str, as_json: bool) -> None:
    """Revoke a token by its id (see token list)."""
    info = TokenStore(token_path()).revoke(token_id)
    if as_json:
        emit_json({"revoked": info.to_dict()})
    else:
        click.echo(f"revoked token {info.id} of actor {info.actor}")

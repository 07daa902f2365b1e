"""``sediment ui``: the web page on a loopback server, signed in through a one-time link."""

from __future__ import annotations

import json
import secrets
import socket
from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._options import (
    get_config,
    json_option,
    shared_token,
    source_lines,
    store_layer_options,
    token_options,
)
from sediment.cli._proposals import reviewer_name
from sediment.cli._workspace import open_served
from sediment.config import process_actor
from sediment.errors import ConfigError
from sediment.memory.model import check_actor
from sediment.server.lifecycle import on_shutdown


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Loopback address to bind (the page is for this machine; use `serve "
                   "--transport http --token` to share it).")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port to bind (0: any free port).")
@token_options
@click.option("--reviewer", default=None, envvar="SEDIMENT_REVIEWER",
              help="Name the one-time link signs in as, recorded with each decision (env "
                   "SEDIMENT_REVIEWER; default: SEDIMENT_ACTOR, else the OS user).")
@click.option("--embedder", "embedder_name", default=None,
              help="Embedder for text searches (minilm, hash, openai).")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Directory path:line sources are read from (default: the layer "
                   "directory, else the project root).")
@click.option("--verify-with", "pubkey", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="Ed25519 public key to check the layers' signatures with.")
@click.option("--no-browser", is_flag=True, help="Print the sign-in link only.")
@click.option("--actor", default=None, envvar="SEDIMENT_ACTOR",
              help="Whose memories and context the page shows, and who the one-time link "
                   "signs in as (env SEDIMENT_ACTOR; default: the OS user).")
@store_layer_options
@json_option
@click.pass_context
def ui(ctx: click.Context, /, host: str, port: int, token: str | None,
       token_file: Path | None, reviewer: str | None,
       embedder_name: str | None, root: Path | None, pubkey: Path | None, no_browser: bool,
       actor: str | None, as_json: bool, store: str | None, layer_dir: Path | None,
       **paths: Path | None) -> None:
    """Open the review page in a browser: the queue of proposals, the layers and their
    diff, and search with explanations. Prints a sign-in link that works once (with
    --json, one line: {"signin": LINK, "url": PAGE}), then serves until interrupted.

    With --store the page is a team server's: the link signs in as --actor with every
    right, as a database login has them; tokens of the database sign in as their actors."""
    import webbrowser

    from sediment.format.mapguard import enable as enable_map_guard

    enable_map_guard()

    from sediment.server import build_http_app, build_server, is_loopback
    from sediment.server.serving import http_server, run
    from sediment.server.web import WebUI

    if not is_loopback(host):
        raise ConfigError(f"sediment ui binds loopback only, not {host}; to serve others, "
                          "use `sediment serve --transport http --token ...`")
    token = shared_token(ctx, token, token_file) or secrets.token_urlsafe(24)
    cfg = get_config(ctx)
    name = check_actor(actor) if actor is not None else process_actor(cfg.env)
    ws = open_served(cfg, store, layer_dir, paths, embedder_name, root)
    team = ws.database is not None
    if team and pubkey is not None:
        raise click.UsageError("--verify-with checks layer files' signatures; a team store has "
                         "none (signatures are file-only)")
    page = WebUI(ws, token=token, root=root or layer_dir or cfg.root, host=host,
                 sources=source_lines(cfg, root or layer_dir or cfg.root),
                 pubkey=pubkey, actor=name)
    app = build_http_app(build_server(ws, flush_seconds=cfg.env.memory_flush_seconds),
                         host=host, token=token, ui=page, tokens=ws.tokens, actor=ws.actor)
    on_shutdown(ws.close)  # after the memory tools' own flush, registered just now
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot bind {host}:{port}: {exc.strerror or exc}") from exc
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    link = page.sign_in_link(f"http://{shown}:{bound}",
                             reviewer_name(reviewer) if reviewer or not team else name)
    if as_json:
        click.echo(json.dumps({"signin": link, "url": f"http://{shown}:{bound}/ui"}))
    else:
        click.echo(f"Sign in (works once): {link}")
        click.echo(f"Afterwards: http://{shown}:{bound}/ui (stop with Ctrl+C)")
    ws.service.warm_up()
    if not no_browser:
        webbrowser.open(link)
    run(http_server(app), sock)

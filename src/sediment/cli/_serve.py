"""``sediment serve``: the MCP server over stdio (default) or streamable HTTP."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sediment.agents.workers import close_workers, size_default_pool
from sediment.auth import TokenStore
from sediment.cli._app import cli
from sediment.cli._oidc import oidc_options, oidc_settings
from sediment.cli._options import (
    get_config,
    open_store,
    shared_token,
    signature_option,
    source_lines,
    store_layer_options,
    team_url,
    token_options,
)
from sediment.cli._output import note, visible
from sediment.cli._workspace import open_served
from sediment.config import Config, tokens_file
from sediment.errors import NotFoundError
from sediment.format.mapguard import enable as enable_map_guard
from sediment.server.lifecycle import on_shutdown
from sediment.store import FILE_NAMES, LayerName

if TYPE_CHECKING:
    from sediment.auth.oidc import OidcSettings


@cli.command()
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio",
              show_default=True, help="stdio for a local client, http for streamable HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind (http). Anything but loopback needs a token "
                   "(SEDIMENT_TOKEN, --token-file, or sediment token create).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port to bind (http; 0 picks a free one and prints it).")
@click.option("--path", "http_path", default="/mcp", show_default=True,
              help="URL path of the MCP endpoint (http).")
@token_options
@oidc_options
@click.option("--embedder", "embedder_name", default=None,
              help="Embedder for text queries and writes (minilm, hash, openai; default: "
                   "configured, else the one the layers record).")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Project root holding knowledge.yaml manifests (default: the layer "
                   "directory, else the project root).")
@click.option("--no-warm-up", is_flag=True,
              help="Load the embedding model on the first query instead of at start.")
@click.option("--agent", default=None,
              help="Expose only this persona's tools (personas: sediment agent list).")
@click.option("--forwarded-allow-ips", "forwarded", default=None, metavar="IPS",
              help="Addresses of the reverse proxies whose X-Forwarded-Proto and -For are "
                   "trusted (http; comma-separated, '*' for any; default: "
                   "FORWARDED_ALLOW_IPS, else 127.0.0.1): behind a proxy on another host "
                   "or container, the page's session cookie is Secure only with it.")
@store_layer_options
@signature_option
@click.pass_context
def serve(ctx: click.Context, /, transport: str, host: str, port: int, http_path: str,
          token: str | None, token_file: Path | None, embedder_name: str | None,
          root: Path | None, no_warm_up: bool, agent: str | None, forwarded: str | None,
          store: str | None, layer_dir: Path | None, **options: Any) -> None:
    """Serve the layers to agents over MCP (tools agents_search, agents_context_write,
    agents_context_propose; chunks and layers as agentsdb:// resources).

    Personas from the configuration are served as MCP prompts; over http the same server
    answers the HTTP API (docs/http-api.md) and the web page for reviewers at /ui (or run
    `sediment ui`), and with --oidc-issuer accepts access tokens from the team's identity
    provider beside Sediment's own (docs/security.md). The handshake is answered at once:
    the embedding model loads in the background.
    """
    from sediment.server import bind_socket, check_binding, check_http_path, is_loopback

    cfg = get_config(ctx)
    token = shared_token(ctx, token, token_file)
    oidc_web_client_id = options.pop("oidc_web_client_id")
    oidc_params = {k: options.pop(k) for k in list(options) if k.startswith("oidc_")}
    oidc_issuer, paths = oidc_params["oidc_issuer"], options
    if transport != "http" and oidc_issuer:
        raise click.UsageError("--oidc-issuer needs --transport http")
    if oidc_web_client_id and not oidc_issuer:
        raise click.UsageError("--oidc-web-client-id needs --oidc-issuer")
    sock = None
    oidc = None
    if transport == "http":
        check_http_path(http_path)
        if oidc_issuer:  # settings errors before the store opens; the port comes later
            oidc_settings(dict(oidc_params), host=host, port=port or 1, path=http_path,
                          loopback=is_loopback(host))
        if team_url(cfg, store, layer_dir, paths) is None:  # a team store requires tokens
            open_store(cfg, store, layer_dir, paths).close()  # the files exist, else an error
            check_binding(host, token, TokenStore(tokens_file(cfg.env)),
                          oauth=bool(oidc_issuer))
        sock = bind_socket(host, port)
        oidc = oidc_settings(oidc_params, host=host, port=sock.getsockname()[1],
                             path=http_path, loopback=is_loopback(host))
    try:
        _serve(cfg, sock, transport, host, http_path, token, embedder_name, root,
               no_warm_up, layer_dir, paths, agent, store, oidc, oidc_web_client_id,
               forwarded)
    finally:
        if sock is not None:
            sock.close()


def _serve(cfg: Config, sock: socket.socket | None, transport: str,
           host: str, http_path: str, token: str | None, embedder_name: str | None,
           root: Path | None, no_warm_up: bool, layer_dir: Path | None,
           paths: dict[str, Path | None], agent: str | None = None,
           store: str | None = None, oidc: OidcSettings | None = None,
           web_client: str | None = None, forwarded: str | None = None) -> None:
    from sediment.server import build_http_app, build_server
    from sediment.server.api import mount_api
    from sediment.server.prompts import serve_personas

    enable_map_guard()
    if root is not None and not root.is_dir():
        raise NotFoundError(f"--root {root}: no such directory")
    ws = open_served(cfg, store, layer_dir, paths, embedder_name, root)
    layerset = ws.store
    files = ws.database is None
    where = (visible(str(layer_dir or cfg.layer_dir)) if files
             else visible(layerset.location(LayerName.LOCAL).rsplit(",", 1)[0]))
    if files and not layerset.present():
        note(f"sediment: no layer files in {where} (looked for "
             f"{', '.join(FILE_NAMES.values())}); serving an empty store that agents can "
             "write to")
    server = build_server(ws, flush_seconds=cfg.env.memory_flush_seconds)
    on_shutdown(ws.close)  # after the memory tools' own flush, registered just now
    size_default_pool(cfg.env.persona_workers)
    registry, context = serve_personas(server, ws, cfg.agents.values(), agent=agent)
    for line in registry.warnings():
        note(f"sediment: {line}")
    for broken in registry.broken():
        click.echo(f"sediment: warning: persona {broken.name} skipped: "
                   f"{visible(broken.error)}", err=True)
    if not no_warm_up:
        ws.service.warm_up()
    if transport == "stdio":
        from sediment.server.lifecycle import run_async, run_shutdown
        from sediment.server.stdio import run_stdio

        def serve_stdio() -> None:
            # The session is over when stdin closes: flush batched use counts now, before
            # the client's grace period ends in SIGTERM (which skips atexit).
            try:
                run_async(server.run_stdio_async)
            finally:
                run_shutdown()

        try:
            run_stdio(serve_stdio)
        finally:
            close_workers()
        return
    assert sock is not None
    from sediment.server.web import WebUI

    mount_api(server, registry, context, host=host, actor=ws.actor)
    oauth = web_sign_in = None
    if oidc is not None:
        from sediment.auth.oidc import JwtVerifier
        from sediment.server.oauth import ResourceServer
        from sediment.server.web import WebSignIn

        verifier = JwtVerifier(oidc)
        oauth = ResourceServer(verifier, http_path)
        if web_client:
            web_sign_in = WebSignIn(verifier, web_client,
                                    cfg.env.oidc_web_client_secret)
        click.echo(f"sediment: accepting access tokens from {visible(oidc.issuer)} for "
                   f"{visible(oidc.resource)} (metadata: {visible(oauth.metadata_url)})",
                   err=True)
    ui = WebUI(ws, token=token, root=root or layer_dir or cfg.root, host=host,
               sources=source_lines(cfg, root or layer_dir or cfg.root), oidc=web_sign_in)
    app = build_http_app(server, host=host, token=token, path=http_path, ui=ui,
                         tokens=ws.tokens, actor=ws.actor, oauth=oauth)
    from sediment.server.serving import http_server, run

    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"sediment: serving MCP on http://{shown}:{bound}{http_path} and the web "
               f"page on http://{shown}:{bound}/ui "
               f"(layers in {where}; pid {os.getpid()})",
               err=True)
    try:
        run(http_server(app, on_exit=close_workers, forwarded_allow_ips=forwarded), sock)
    finally:
        close_workers()

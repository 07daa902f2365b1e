"""Commands that add to the agent-writable layers, as the MCP tools do: write, propose,
forget."""

from __future__ import annotations

from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._ids import CHUNK_ID
from sediment.cli._memory import actor_option
from sediment.cli._options import (
    build_embedder,
    get_config,
    json_option,
    open_store,
    own_actor,
    store_layer_options,
)
from sediment.cli._output import emit_json, visible
from sediment.memory.model import check_actor
from sediment.ops.forget import forget
from sediment.ops.propose import propose
from sediment.ops.requests import WriteRequest, parse
from sediment.ops.write import write_context
from sediment.store import AGENT_WRITABLE, HUMAN_WRITABLE, LayerName


@cli.command()
@click.option("--scope", type=click.Choice([n.value for n in AGENT_WRITABLE]), default="local",
              show_default=True, help="Layer to append to (base and user are not writable "
                                      "through this path).")
@click.option("--kind", required=True, help="Kind of the chunk, e.g. 'invariant'.")
@click.option("--content", required=True, help="The text of the chunk.")
@click.option("--confidence", type=float, required=True, help="Confidence from 0.0 to 1.0.")
@click.option("--source", "sources", multiple=True,
              help="A provenance reference: a chunk id or 'path:line' (repeatable).")
@click.option("--author", type=click.Choice(["mcp", "human"]), default="human",
              show_default=True, help="Who wrote this (agents writing through MCP are 'mcp').")
@click.option("--embedder", "embedder_name", default=None)
@actor_option
@store_layer_options
@json_option
@click.pass_context
def write(ctx: click.Context, /, scope: str, kind: str, content: str, confidence: float,
          sources: tuple[str, ...], author: str, embedder_name: str | None,
          actor: str | None, as_json: bool, store: str | None, layer_dir: Path | None,
          **paths: Path | None) -> None:
    """Append one chunk to the local or delta layer (the MCP write path's service)."""
    cfg = get_config(ctx)
    layerset = open_store(cfg, store, layer_dir, paths,
                          writes=AGENT_WRITABLE)
    embedder = build_embedder(cfg, embedder_name, layerset=layerset)
    new_id = write_context(layerset, embedder,
                           parse(WriteRequest, {"content": content, "kind": kind,
                                                "confidence": confidence,
                                                "sources": list(sources), "scope": scope}),
                           actor=check_actor(actor or own_actor()), author=author)
    path = layerset.location(LayerName(scope))
    if as_json:
        emit_json({"id": new_id, "layer": scope, "path": str(path)})
    else:
        click.echo(f"wrote chunk {new_id} to the {scope} layer ({visible(str(path))})")


@cli.command(name="propose")
@click.argument("chunk_id", type=CHUNK_ID)
@actor_option
@store_layer_options
@json_option
@click.pass_context
def propose_cmd(ctx: click.Context, /, chunk_id: int, actor: str | None, as_json: bool,
                store: str | None, layer_dir: Path | None, **paths: Path | None) -> None:
    """Propose a chunk of the local or delta layer for the user layer (RFC 11.2), as the
    MCP tool agents_context_propose does; a person decides with `sediment proposals`."""
    layerset = open_store(get_config(ctx), store, layer_dir, paths,
                          writes=(LayerName.DELTA,))
    p = propose(layerset, chunk_id, actor=check_actor(actor or own_actor()))
    if as_json:
        emit_json({"proposal_id": p.proposal_id, "context_id": p.context_id,
                   "from_layer": p.from_layer.value, "copied_to_delta": p.copied_to_delta,
                   "already_pending": p.already_pending})
    elif p.already_pending:
        click.echo(f"chunk {chunk_id} already has pending proposal {p.proposal_id}")
    else:
        copied = " (copied from local to delta)" if p.copied_to_delta else ""
        click.echo(f"proposal {p.proposal_id}: chunk {chunk_id} for the user layer{copied}; "
                   f"review with `sediment proposals show {p.proposal_id}`")


@cli.command(name="forget")
@click.argument("chunk_id", type=CHUNK_ID)
@click.option("--reason", required=True, help="Why the chunk is forgotten (kept in the event).")
@store_layer_options
@json_option
@click.pass_context
def forget_cmd(ctx: click.Context, /, chunk_id: int, reason: str, as_json: bool,
               store: str | None, layer_dir: Path | None, **paths: Path | None) -> None:
    """Hide a chunk from search with a forget event (nothing is deleted: the event is in
    the chunk's own layer, or user for a base chunk, and `inspect --id` shows it)."""
    layerset = open_store(get_config(ctx), store, layer_dir, paths,
                          writes=HUMAN_WRITABLE)
    f = forget(layerset, chunk_id, reason, by=own_actor())
    if as_json:
        emit_json({"event_id": f.event_id, "context_id": f.context_id, "layer": f.layer.value,
                   "already_forgotten": f.already})
    elif f.already:
        click.echo(f"chunk {chunk_id} was already forgotten")
    else:
        click.echo(f"forgot chunk {chunk_id}: event {f.event_id} in the {f.layer.value} layer")

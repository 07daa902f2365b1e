"""``sediment agent``: list, test and scaffold personas (docs/personas.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sediment.cli._app import cli
from sediment.cli._options import (
    get_config,
    json_option,
    layer_options,
)
from sediment.cli._output import emit_json, note, visible
from sediment.errors import ValidationError

if TYPE_CHECKING:
    from sediment.agents import Registry
    from sediment.server.prompts import ServiceContext


def _personas(ctx: click.Context, embedder_name: str | None, layer_dir: Path | None,
              **paths: Path | None) -> tuple[Registry, ServiceContext]:
    from sediment.agents.workers import size_default_pool
    from sediment.cli._workspace import open_served
    from sediment.server import build_server
    from sediment.server.prompts import serve_personas

    cfg = get_config(ctx)
    size_default_pool(cfg.env.persona_workers)
    ws = open_served(cfg, None, layer_dir, paths, embedder_name, None)
    return serve_personas(build_server(ws), ws, cfg.agents.values())


@cli.group()
def agent() -> None:
    """Personas: named system prompts with scoped tools, served as MCP prompts."""


_embedder_opt = click.option("--embedder", "embedder_name", default=None,
                             help="Embedder for the personas' searches (minilm, hash, openai).")


@agent.command("list")
@_embedder_opt
@json_option
@layer_options
@click.pass_context
def list_(ctx: click.Context, /, embedder_name: str | None, as_json: bool,
          layer_dir: Path | None, **paths: Path | None) -> None:
    """List the configured personas with their source and tools, and those that failed to
    load with why (``broken``)."""
    registry, _ = _personas(ctx, embedder_name, layer_dir, **paths)
    infos = registry.list()
    warnings = registry.warnings()
    for line in warnings:
        note(line)
    broken = registry.broken()
    if as_json:
        emit_json({"agents": [i.to_dict() for i in infos], "warnings": warnings,
                   "broken": [b.to_dict() for b in broken]})
        return
    if not infos and not broken:
        click.echo("No personas configured (see sediment agent init).")
    for i in infos:
        click.echo(f"{i.name:<20} {visible(i.description)}  (tools: "
                   f"{', '.join(i.tools) or 'none'})  [{i.source}]")
    for b in broken:
        click.echo(f"{b.name:<20} BROKEN: {visible(b.error)}  [{b.source}]")


@agent.command("test")
@click.argument("name")
@click.option("--arg", "args", multiple=True, metavar="KEY=VALUE",
              help="An argument for the persona (repeatable).")
@_embedder_opt
@json_option
@layer_options
@click.pass_context
def test(ctx: click.Context, /, name: str, args: tuple[str, ...], embedder_name: str | None,
         as_json: bool, layer_dir: Path | None, **paths: Path | None) -> None:
    """Resolve a persona and print what a client would receive."""
    values: dict[str, str] = {}
    for raw in args:
        key, sep, value = raw.partition("=")
        if not sep or not key:
            raise ValidationError(f"--arg {raw!r}: write KEY=VALUE")
        values[key] = value
    registry, context = _personas(ctx, embedder_name, layer_dir, **paths)
    persona = registry.find(name)
    started = time.perf_counter()
    resolved = registry.resolve(name, values, context)
    elapsed = (time.perf_counter() - started) * 1000
    warnings = registry.warnings(name, resolved.tools)
    for line in warnings:
        note(line)
    if as_json:
        emit_json({**resolved.to_dict(), "source": persona.info.source,
                   "elapsed_ms": round(elapsed, 1), **resolved.stats, "warnings": warnings})
        return
    info = persona.info
    click.echo(f"Agent: {info.name}")
    click.echo(f"Source: {info.source} ({visible(info.origin)})")
    click.echo(f"Tools: {', '.join(resolved.tools) or 'none'}")
    click.echo(f"\nSystem prompt ({len(resolved.system)} chars):")
    for line in visible(resolved.system, keep_lines=True).splitlines():
        click.echo(f"  {line}")
    click.echo(f"\nMessages ({len(resolved.messages)}):")
    for m in resolved.messages:
        click.echo(f"  [{m.role}] {visible(m.content, keep_lines=True)}")
    s = resolved.stats
    click.echo(f"\nResolved in {elapsed:.0f}ms ({s.get('searches', 0)} searches, "
               f"{s.get('gets', 0)} document fetches)")


@agent.command("init")
@click.argument("name")
@click.option("--dir", "directory", default="agents", show_default=True,
              help="Directory for the script, relative to the project root.")
@json_option
@click.pass_context
def init(ctx: click.Context, /, name: str, directory: str, as_json: bool) -> None:
    """Scaffold a Lua persona and print the config to add to sediment.toml."""
    from sediment.agents import scaffold_script
    cfg = get_config(ctx)
    path, snippet = scaffold_script(name, cfg.root, directory)
    if as_json:
        emit_json({"path": str(path), "config": snippet})
        return
    click.echo(f"Created: {path}")
    click.echo("Add to sediment.toml:\n")
    click.echo(snippet)

"""Commands that create or append: compile, write."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sediment.cli._app import (
    cli,
    emit_json,
    get_config,
    is_terminal,
    json_option,
    layer_options,
    open_layerset,
)
from sediment.cli._embedder import build_embedder
from sediment.cli._sources import configured_sources
from sediment.ingest.compile import CompileOptions, compile_layer
from sediment.ingest.sync import write_state
from sediment.ops.requests import WriteRequest, parse
from sediment.ops.write import write_context
from sediment.store import AGENT_WRITABLE


@contextlib.contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """A progress callback: a rich bar on a terminal, nothing otherwise."""
    if not enabled:
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update


@cli.command(name="compile")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Directory the globs are relative to (default: the project root).")
@click.option("--include", "include", multiple=True,
              help="Glob of files to compile, e.g. 'docs/**/*.md' (repeatable; default from "
                   "sediment.toml, else '**/*.md').")
@click.option("--exclude", "exclude", multiple=True, help="Glob of files to leave out.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Output layer file (default: DIR/AGENTS.db).")
@click.option("--max-chars", type=click.IntRange(min=100), default=None,
              help="Largest chunk in characters (default 1000, about the 256 tokens the "
                   "default model reads; code blocks stay whole).")
@click.option("--kind-rule", "kind_rules", multiple=True, metavar="GLOB=KIND",
              help="Give files matching GLOB this kind (repeatable, first match wins).")
@click.option("--default-kind", default=None, help="Kind of chunks no rule names "
                                                   "(default 'canonical').")
@click.option("--element-type", type=click.Choice(["f32", "i8"]), default=None,
              help="Store embeddings as f32 (default) or int8.")
@click.option("--embedder", "embedder_name", default=None,
              help="Embedder (minilm, hash, openai); default from config.")
@click.option("--no-index", is_flag=True,
              help="Do not build the approximate-search index (built at 100,000+ chunks).")
@click.option("--no-kcp", is_flag=True,
              help="Ignore knowledge.yaml manifests (by default their units are ingested).")
@json_option
@click.pass_context
def compile_cmd(ctx: click.Context, /, root: Path | None, include: tuple[str, ...],
                exclude: tuple[str, ...], out: Path | None, max_chars: int | None,
                kind_rules: tuple[str, ...], default_kind: str | None,
                element_type: str | None, embedder_name: str | None, no_index: bool,
                no_kcp: bool,
                as_json: bool) -> None:
    """Compile documents into an immutable base layer (RFC 15.1).

    Markdown is split at headings and paragraphs with code fences kept whole; every chunk
    records `path:line` of where it starts. A chunk whose file and text are unchanged keeps
    its id from the previous base (--out), so overrides in other layers still apply; the
    same sources, embedder and previous base give the same bytes.
    """
    cfg = get_config(ctx)
    rules = []
    for r in kind_rules:
        glob, sep, kind = r.rpartition("=")
        if not sep or not glob or not kind:
            raise click.BadParameter(f"{r!r} is not GLOB=KIND", param_hint="--kind-rule")
        rules.append((glob, kind))
    rules += cfg.compile.kinds  # flags first: the first matching rule wins
    flags_root, root = root, root or cfg.root
    annotator = None
    if not no_kcp:
        from sediment.kcp import plan_kcp

        annotator = plan_kcp(root)
    opts = CompileOptions(
        root=root,
        include=list(include) or list(cfg.compile.include),
        exclude=list(exclude) or list(cfg.compile.exclude),
        out=out or (cfg.layer_dir / "AGENTS.db"),
        max_chars=max_chars or cfg.compile.max_chars,
        kind_rules=rules,
        default_kind=default_kind or cfg.compile.default_kind,
        element_type=element_type or cfg.compile.element_type,
        annotator=annotator,
        build_index=not no_index,
        sources=[] if (include or exclude or flags_root) else configured_sources(cfg),
    )
    embedder = build_embedder(cfg, embedder_name)
    with _progress(is_terminal() and not as_json) as progress:
        report = compile_layer(opts, embedder, progress=progress)
    write_state(opts, embedder, report)
    if as_json:
        emit_json(report.to_dict())
        return
    for s in report.skipped:
        click.echo(f"skipped {s.path}: {s.reason}", err=True)
    for w in report.warnings:
        click.echo(f"warning: {w}", err=True)
    click.echo(
        f"compiled {report.chunks} chunks from {report.files} files into {report.out} "
        f"({report.bytes} bytes, sha256 {report.sha256[:16]}); {len(report.skipped)} skipped; "
        f"embedded {report.embedded} new, {report.cached} from cache; "
        f"{report.seconds:.2f}s" + (f"; index {report.index.name}" if report.index else ""))


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
@layer_options
@json_option
@click.pass_context
def write(ctx: click.Context, /, scope: str, kind: str, content: str, confidence: float,
          sources: tuple[str, ...], author: str, embedder_name: str | None, as_json: bool,
          layer_dir: Path | None, **paths: Path | None) -> None:
    """Append one chunk to the local or delta layer (the MCP write path's service)."""
    cfg = get_config(ctx)
    layerset = open_layerset(cfg, layer_dir, **paths)
    embedder = build_embedder(cfg, embedder_name)
    new_id = write_context(layerset, embedder,
                           parse(WriteRequest, {"content": content, "kind": kind,
                                                "confidence": confidence,
                                                "sources": list(sources), "scope": scope}),
                           author=author)
    path = layerset.paths[next(n for n in AGENT_WRITABLE if n.value == scope)]
    if as_json:
        emit_json({"id": new_id, "layer": scope, "path": str(path)})
    else:
        click.echo(f"wrote chunk {new_id} to the {scope} layer ({path})")

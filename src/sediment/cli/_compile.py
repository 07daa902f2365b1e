"""``sediment compile``: documents into an immutable base layer (RFC 15.1)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._options import build_embedder, embedder_option, get_config, json_option
from sediment.cli._output import detail, emit_json, note, to_stdout, visible
from sediment.cli._progress import progress
from sediment.cli._sources import compile_options, configured_sources
from sediment.ingest.compile import compile_layer
from sediment.ingest.sync import write_state
from sediment.store.atomic import is_regular_target


@cli.command(name="compile")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Directory the globs are relative to (default: the project root).")
@click.option("--include", "include", multiple=True,
              help="Glob of files to compile, e.g. 'docs/**/*.md' (repeatable; default from "
                   "sediment.toml, else '**/*.md').")
@click.option("--exclude", "exclude", multiple=True, help="Glob of files to leave out.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              default=None, help="Output layer file (default: DIR/AGENTS.db; '-' for stdout).")
@click.option("--max-chars", type=click.IntRange(min=100), default=None,
              help="Largest chunk in characters (default 1000, about the 256 tokens the "
                   "default model reads; code blocks stay whole).")
@click.option("--kind-rule", "kind_rules", multiple=True, metavar="GLOB=KIND",
              help="Give files matching GLOB this kind (repeatable, first match wins).")
@click.option("--default-kind", default=None, help="Kind of chunks no rule names "
                                                   "(default 'canonical').")
@click.option("--element-type", type=click.Choice(["f32", "i8"]), default=None,
              help="Store embeddings as f32 (default) or int8.")
@embedder_option
@click.option("--no-index", is_flag=True,
              help="Do not build the approximate-search index (built at 100,000+ chunks).")
@click.option("--no-kcp", is_flag=True,
              help="Ignore knowledge.yaml manifests (by default their units are ingested).")
@click.option("--allow-empty", is_flag=True,
              help="Write an empty layer when no file matches (otherwise an error).")
@json_option
@click.pass_context
def compile_cmd(ctx: click.Context, /, root: Path | None, include: tuple[str, ...],
                exclude: tuple[str, ...], out: Path | None, max_chars: int | None,
                kind_rules: tuple[str, ...], default_kind: str | None,
                element_type: str | None, embedder_name: str | None, no_index: bool,
                no_kcp: bool, allow_empty: bool, as_json: bool) -> None:
    """Compile documents into an immutable base layer (RFC 15.1).

    Markdown is split at headings and paragraphs with code fences kept whole; every chunk
    records `path:line` of where it starts. A chunk whose file and text are unchanged keeps
    its id from the previous base (--out), so overrides in other layers still apply; the
    same sources, embedder and previous base give the same bytes.
    """
    cfg = get_config(ctx)
    stdout = to_stdout(out, as_json, "compile")
    rules = []
    for r in kind_rules:
        glob, sep, kind = r.rpartition("=")
        if not sep or not glob or not kind:
            raise click.BadParameter(f"{r!r} is not GLOB=KIND", param_hint="--kind-rule")
        rules.append((glob, kind))
    rules += cfg.compile.kinds  # flags first: the first matching rule wins
    opts = replace(compile_options(
        cfg, [] if (include or exclude or root) else configured_sources(cfg), root=root, out=out,
        no_kcp=no_kcp, no_index=no_index, include=list(include), exclude=list(exclude),
        max_chars=max_chars, kind_rules=rules, default_kind=default_kind,
        element_type=element_type), allow_empty=allow_empty)
    embedder = build_embedder(cfg, embedder_name)
    detail(f"compiling {', '.join(opts.include)} under {opts.root} into {opts.out}")
    with progress(enabled=not as_json) as update:
        report = compile_layer(opts, embedder, progress=update)
    if not stdout and is_regular_target(opts.out):
        write_state(opts, embedder, report)
    if as_json:
        emit_json(report.to_dict())
        return
    for s in report.skipped:
        note(f"skipped {s.path}: {s.reason}")
    for w in report.warnings:
        note(f"warning: {w}")
    if not report.chunks:
        note("warning: no file matched; wrote an empty layer (--allow-empty)")
    click.echo(
        f"compiled {report.chunks} chunks from {report.files} files into "
        f"{visible(str(report.out))} "
        f"({report.bytes} bytes, sha256 {report.sha256[:16]}); {len(report.skipped)} skipped; "
        f"embedded {report.embedded} new, {report.cached} from cache; "
        f"{report.seconds:.2f}s" + (f"; index {report.index.name}" if report.index else ""),
        err=stdout)

"""``sediment sync``: recompile what changed since the last compile, once or on every change."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from types import FrameType

import click

from sediment.cli._app import cli
from sediment.cli._options import build_embedder, embedder_option, get_config, json_option
from sediment.cli._output import emit_json, visible
from sediment.cli._progress import progress as progress_bar
from sediment.cli._sources import compile_options, configured_sources
from sediment.errors import SedimentError
from sediment.ingest.connectors import SourceRoot
from sediment.ingest.sync import SyncReport, sync_layer
from sediment.ingest.watch import snapshot, watch
from sediment.store import LayerName


def _show(report: SyncReport, as_json: bool, *, lines: bool = False) -> None:
    if as_json:
        if lines:
            click.echo(json.dumps(report.to_dict(), ensure_ascii=False, default=str))
        else:
            emit_json(report.to_dict())
        return
    c = report.compile
    for s in c.skipped:
        click.echo(f"skipped {visible(s.path)}: {visible(s.reason)}", err=True)
    for w in c.warnings:
        click.echo(f"warning: {visible(w)}", err=True)
    for o in report.overrides:
        click.echo(f"override: chunk {o.id} in the {o.layer} layer ({visible(o.path)}) "
                   f"overrode a base chunk whose text was {o.reason} "
                   f"(was {visible(o.source)})", err=True)
    how = "full compile" if report.full else f"reused {c.reused} chunks"
    click.echo(
        f"synced {c.chunks} chunks from {c.files} files into {c.out} "
        f"(sha256 {c.sha256[:16]}): {len(report.added)} added, {len(report.changed)} changed, "
        f"{len(report.removed)} removed file(s); {how}, embedded {c.embedded} new, "
        f"{c.cached} from cache; {len(report.overrides)} override(s) to review; "
        f"{c.seconds:.2f}s")


@cli.command(name="sync")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="The base layer to bring up to date (default: DIR/AGENTS.db).")
@embedder_option
@click.option("--full", is_flag=True, help="Read every file again instead of reusing the "
                                           "unchanged ones (the result is the same).")
@click.option("--no-index", is_flag=True,
              help="Do not build the approximate-search index (built at 100,000+ chunks).")
@click.option("--no-kcp", is_flag=True, help="Ignore knowledge.yaml manifests.")
@click.option("--watch", "watching", is_flag=True,
              help="Keep running: sync again whenever the sources' files change, until "
                   "Ctrl-C or SIGTERM.")
@click.option("--interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="With --watch: seconds between looks at the files.")
@click.option("--debounce", type=click.FloatRange(min=0.0), default=0.5, show_default=True,
              help="With --watch: seconds the files must stay unchanged before a sync.")
@json_option
@click.pass_context
def sync_cmd(ctx: click.Context, /, out: Path | None, embedder_name: str | None, full: bool,
             no_index: bool, no_kcp: bool, watching: bool, interval: float, debounce: float,
             as_json: bool) -> None:
    """Recompile only what changed since the last compile or sync.

    Reads the configured sources (`[[sources]]` in sediment.toml, else the [compile]
    globs under the project root); a git source is fetched and checked out at its ref
    first. A file whose text is unchanged keeps its chunks, ids and vectors from the
    previous base without being read again; the new base has the same bytes a full
    `sediment compile` of the same sources would write. Chunks of the user, delta and local
    layers that overrode a base chunk which is now removed or changed are reported. With
    --json, one JSON object (per sync, one per line, with --watch).
    """
    cfg = get_config(ctx)
    embedder = build_embedder(cfg, embedder_name)
    directory = (out.parent if out else cfg.layer_dir)
    others = [(n.value, directory / n.file_name) for n in LayerName if n is not LayerName.BASE]

    def once(full_now: bool, sources: list[SourceRoot] | None = None) -> SyncReport:
        sources = configured_sources(cfg) if sources is None else sources
        opts = compile_options(cfg, sources, out=out, no_kcp=no_kcp, no_index=no_index)
        with progress_bar(enabled=not as_json and not watching) as progress:
            return sync_layer(opts, embedder, others=others, progress=progress, full=full_now)

    sources = configured_sources(cfg)
    watched = [s for s in sources if not (s.record and s.record.get("type") == "git")] \
        if cfg.sources else [SourceRoot(cfg.root, cfg.compile.include, cfg.compile.exclude)]
    since = snapshot(watched) if watching else None
    _show(once(full, sources), as_json, lines=watching)
    if not watching:
        return
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if not as_json:
            click.echo(f"watching for changes every {interval:g}s (Ctrl-C to stop)", err=True)

        def on_change() -> None:
            try:
                _show(once(False), as_json, lines=True)
            except SedimentError as exc:
                click.echo(f"Error: {exc}", err=True)

        watch(watched, on_change, stop=stop, interval=interval, debounce=debounce,
              since=since)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if not as_json:
        click.echo("stopped watching", err=True)

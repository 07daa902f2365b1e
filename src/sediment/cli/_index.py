"""``sediment index build|status|clean``: the derived approximate-search index files."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from sediment.cli._app import cli
from sediment.cli._options import get_config, json_option, layer_options, open_layerset
from sediment.cli._output import emit_json, visible
from sediment.cli._progress import progress
from sediment.errors import NotFoundError
from sediment.format import LayerFile
from sediment.search.ann import ANN_MIN_ROWS, clean_indexes, ensure_index, find_index, stale_indexes
from sediment.search.lexicon import clean_lexicons, lexicon_files, stale_lexicons


def _targets(ctx: click.Context, paths: tuple[Path, ...], layer_dir: Path | None,
             layer_paths: dict[str, Path | None]) -> list[Path]:
    if paths:
        for p in paths:
            if not p.exists():
                raise NotFoundError(f"{p}: no such layer file")
        return list(paths)
    layerset = open_layerset(get_config(ctx), layer_dir, layer_paths)
    return [layer.path for layer in layerset.layers()]


@cli.group()
def index() -> None:
    """Approximate-search and lexical index files for large layers.

    An index is derived data beside its layer (`.AGENTS.db.<key>.<rows>.<metric>.faiss`),
    named by a hash of the embedding rows it covers, so a changed layer never uses a stale
    index. After an append the index still covers the layer's first rows: searches use it
    for those and scan the new rows exactly, and `index build` extends it rather than
    starting again. Searches use an index for layers of at least 100,000 rows and scan
    exactly otherwise or with --exact.

    Layers of 5,000 chunks or more also get a lexical index
    (`.AGENTS.db.<key>.<chunks>.<analyzer>.lex`, BM25 postings of the first <chunks> chunks,
    named by a digest of their text), written by `compile` or by the first search that needs
    it; after an append it still serves the earlier chunks. `status` and `clean` cover those
    files too.
    """


@index.command(name="build")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--min-rows", type=click.IntRange(min=1), default=ANN_MIN_ROWS,
              show_default=True, help="Skip layers with fewer rows than this.")
@layer_options
@json_option
@click.pass_context
def build_cmd(ctx: click.Context, /, paths: tuple[Path, ...], min_rows: int, as_json: bool,
              layer_dir: Path | None, **layer_paths: Path | None) -> None:
    """Build the index of each layer (default: every layer of the set) that is large enough."""
    report: list[dict[str, Any]] = []
    for path in _targets(ctx, paths, layer_dir, layer_paths):
        start = time.perf_counter()
        with progress(enabled=not as_json) as update:
            label = f"indexing {path.name}"
            cb = (lambda done, total, p=update, lb=label: p(lb, done, total)) \
                if update else None
            built = ensure_index(path, min_rows=min_rows, progress=cb)
        report.append({"layer": str(path), "index": str(built) if built else None,
                       "seconds": round(time.perf_counter() - start, 2)})
    if as_json:
        emit_json(report)
        return
    for r in report:
        if r["index"]:
            click.echo(f"{visible(r['layer'])}: index {visible(r['index'])} ({r['seconds']}s)")
        else:
            click.echo(f"{visible(r['layer'])}: fewer than {min_rows} rows, no index needed")


@index.command(name="status")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))
@layer_options
@json_option
@click.pass_context
def status_cmd(ctx: click.Context, /, paths: tuple[Path, ...], as_json: bool,
               layer_dir: Path | None, **layer_paths: Path | None) -> None:
    """Show which layers have a current index, which need one, and stale index files."""
    report: list[dict[str, Any]] = []
    for path in _targets(ctx, paths, layer_dir, layer_paths):
        f = LayerFile.open(path)
        rows = f.embedding_info.rows
        found = find_index(f)
        old_lex = stale_lexicons(f)
        report.append({"layer": str(path), "rows": rows, "needs_index": rows >= ANN_MIN_ROWS,
                       "index": str(found.path) if found else None,
                       "indexed_rows": found.rows if found else 0,
                       "lexicons": [str(x.path) for x in lexicon_files(path)
                                    if x.path not in old_lex],
                       "stale": [str(p) for p in stale_indexes(
                           f, keep=found.path if found else None) + old_lex]})
    if as_json:
        emit_json(report)
        return
    for r in report:
        if r["index"] and r["indexed_rows"] == r["rows"]:
            state = "current index"
        elif r["index"]:
            state = (f"index covers the first {r['indexed_rows']} rows; the rest are scanned "
                     "exactly (`sediment index build` extends it)")
        elif r["needs_index"]:
            state = "no index (run `sediment index build`)"
        else:
            state = "small enough for exact scans"
        lex = f"; lexical index {visible(', '.join(r['lexicons']))}" if r["lexicons"] else ""
        click.echo(f"{visible(r['layer'])}: {r['rows']} rows, {state}{lex}"
                   + (f"; {len(r['stale'])} stale file(s)" if r["stale"] else ""))


@index.command(name="clean")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--all", "remove_all", is_flag=True, help="Also remove current indexes.")
@layer_options
@json_option
@click.pass_context
def clean_cmd(ctx: click.Context, /, paths: tuple[Path, ...], remove_all: bool, as_json: bool,
              layer_dir: Path | None, **layer_paths: Path | None) -> None:
    """Remove index files (approximate and lexical) of older layer versions (with --all,
    every index file)."""
    removed: list[str] = []
    for path in _targets(ctx, paths, layer_dir, layer_paths):
        removed.extend(str(p) for p in clean_indexes(path, remove_all=remove_all))
        removed.extend(str(p) for p in clean_lexicons(path, remove_all=remove_all))
    if as_json:
        emit_json({"removed": removed})
    else:
        click.echo(f"removed {len(removed)} index file(s)")

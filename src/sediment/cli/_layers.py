"""Commands about layer files themselves: inspect, validate, layers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from sediment.cli._app import cli
from sediment.cli._ids import CHUNK_ID
from sediment.cli._options import (
    get_config,
    json_option,
    open_store,
    source_lines,
    store_layer_options,
)
from sediment.cli._output import console, emit_json, visible
from sediment.embed import embedder_for_profile
from sediment.errors import FormatError
from sediment.format import LayerFile
from sediment.store import PRECEDENCE, LayerSet, LayerStore
from sediment.store.foreign import foreign_ids


def _describe_file(f: LayerFile) -> dict[str, Any]:
    e = f.embedding_info
    kinds: dict[str, int] = {}
    authors: dict[str, int] = {}
    if f.chunk_count:
        import numpy as np

        for col, out in (("kind", kinds), ("author", authors)):
            sids, counts = np.unique(f.records[col], return_counts=True)
            for s, c in zip(sids.tolist(), counts.tolist(), strict=True):
                out[f.string(int(s))] = int(c)
    return {
        "path": f.path,
        "bytes": f.size,
        "version": f"{f.header.version_major}.{f.header.version_minor}",
        "sections": [{"kind": s.name, "offset": s.offset, "length": s.length}
                     for s in f.sections],
        "chunks": f.chunk_count,
        "strings": f.string_count,
        "relationships": f.relationship_count,
        "embedding": {"rows": e.rows, "dim": e.dim, "element_type": e.element_name,
                      "quant_scale": e.quant_scale},
        "kinds": dict(sorted(kinds.items())),
        "authors": dict(sorted(authors.items())),
        "metadata": f.metadata,
    }


@cli.command()
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option("--layer", "layer_path", type=click.Path(path_type=Path), default=None,
              help="The layer file (same as PATH).")
@click.option("--id", "chunk_id", type=CHUNK_ID, default=None,
              help="Show one chunk: its provenance resolved and every event about it.")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Directory that `path:line` sources are relative to (default: cwd).")
@json_option
@click.pass_context
def inspect(ctx: click.Context, /, path: Path | None, layer_path: Path | None,
            chunk_id: int | None, root: Path | None, as_json: bool) -> None:
    """Show a layer file's header, sections, counts and embedding profile, or with --id one
    chunk with its sources resolved and the proposals and decisions that refer to it."""
    if (path is None) == (layer_path is None):
        raise click.UsageError("give the layer file as PATH or as --layer FILE (one of them)")
    target = path or layer_path
    assert target is not None
    if chunk_id is not None:
        from sediment.cli._chunk import show_chunk

        show_chunk(target, chunk_id, as_json=as_json,
                   lines=source_lines(get_config(ctx), root or Path.cwd()))
        return
    f = LayerFile.open(target)
    info = _describe_file(f)
    if as_json:
        emit_json(info)
        return
    con = console()
    con.print(f"{visible(str(target))}: AGENTS.db v{info['version']}, {info['bytes']} bytes")
    table = Table("section", "offset", "length")
    for s in info["sections"]:
        table.add_row(visible(s["kind"]), str(s["offset"]), str(s["length"]))
    con.print(table)
    e = info["embedding"]
    con.print(f"chunks: {info['chunks']}  strings: {info['strings']}  relationships: "
                  f"{info['relationships']}")
    con.print(f"embeddings: {e['rows']} x {e['dim']} {e['element_type']}"
                  + (f" (scale {e['quant_scale']:g})" if e["element_type"] == "i8" else ""))
    con.print("kinds: " + (", ".join(f"{visible(k)} {v}" for k, v in info["kinds"].items())
                           or "-"))
    con.print("authors: " + (", ".join(f"{visible(k)} {v}" for k, v in info["authors"].items())
                             or "-"))
    prof = (info["metadata"] or {}).get("embedding_profile")
    con.print("profile: " + (json.dumps(prof) if prof else "none recorded"))


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@json_option
@click.pass_context
def validate(ctx: click.Context, /, paths: tuple[Path, ...], as_json: bool) -> None:
    """Check layer files against every rule of the format; exit 1 if any is invalid."""
    report: list[dict[str, Any]] = []
    for path in paths:
        errors: list[FormatError] = []
        try:
            errors = LayerFile.open(path).validate()
        except FormatError as exc:
            errors = [exc]
        report.append({"path": str(path), "valid": not errors,
                       "violations": [{"rule": e.rule, "field": e.field, "offset": e.offset,
                                       "message": e.detail} for e in errors]})
    if as_json:
        emit_json(report)
    else:
        for r in report:
            if r["valid"]:
                click.echo(f"{visible(r['path'])}: valid")
            else:
                click.echo(f"{visible(r['path'])}: INVALID ({len(r['violations'])} "
                           "violation(s))")
                for v in r["violations"]:
                    where = f"offset {v['offset']}" if v["offset"] is not None else "-"
                    click.echo(visible(f"  [{v['rule']}] {v['field']} at {where}: "
                                       f"{v['message']}"))
    if not all(r["valid"] for r in report):
        ctx.exit(1)


def _store_rows(store: LayerStore) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name in PRECEDENCE:
        s = store.summary(name, max_ids=0)
        rows.append({"layer": name.value, "path": store.location(name),
                     "present": s is not None, "chunks": s.chunks if s else 0, "bytes": None,
                     "dim": s.dim if s else None, "element_type": s.element_type if s else None,
                     "profile": s.profile if s else None})
    return rows


def _file_rows(ls: LayerSet) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name in PRECEDENCE:
        path = ls.paths.get(name)
        layer = ls.layer(name)
        f = layer.file if layer else None
        rows.append({
            "layer": name.value, "path": str(path) if path else None, "present": f is not None,
            "chunks": f.chunk_count if f else 0, "bytes": f.size if f else 0,
            "dim": f.dim if f else None, "element_type": f.element_type if f else None,
            "profile": f.embedding_profile if f else None,
        })
    return rows


@cli.command()
@store_layer_options
@json_option
@click.pass_context
def layers(ctx: click.Context, /, as_json: bool, store: str | None, layer_dir: Path | None,
           **paths: Path | None) -> None:
    """List the layers of the set, in precedence order, and check they fit together."""
    opened = open_store(get_config(ctx), store, layer_dir, paths)
    ls = opened.layer_files()
    rows = _store_rows(opened) if ls is None else _file_rows(ls)
    schema = opened.schema()
    notice = foreign_ids(ls) if ls is not None else None
    if as_json:
        emit_json({"layers": rows, "compatible": True,
                   "schema": None if schema is None else
                   {"dim": schema.dim, "element_type": schema.element_type,
                    "profile": schema.profile},
                   "foreign_ids": notice.to_dict() if notice else None})
        return
    if ls is None:  # a PostgreSQL project: no files, so no sizes or paths on disk
        for r in rows:
            state = f"{r['chunks']:>8} chunks  {r['dim']} {r['element_type']}" \
                if r["present"] else f"{'absent':>15}"
            click.echo(f"{r['layer']:<6} {state}  {visible(r['path'])}")
        click.echo("precedence: local > user > delta > base; schemas compatible")
        return
    if notice is not None:
        click.echo(f"warning: {visible(notice.message)}", err=True)
    for r in rows:
        if r["present"]:
            click.echo(f"{r['layer']:<6} {r['chunks']:>8} chunks {r['bytes']:>11} bytes  "
                       f"{r['dim']} {r['element_type']}  {visible(r['path'] or '')}")
        else:
            click.echo(f"{r['layer']:<6} {'absent':>15}  {visible(r['path'] or '-')}")
    profiles = {visible(f"{p['backend']}/{p['model']}") for r in rows if (p := r["profile"])}
    click.echo("profile: " + (", ".join(sorted(profiles)) or "none recorded"))
    click.echo("precedence: local > user > delta > base; schemas compatible")
    if schema is not None and schema.profile is not None:
        found = embedder_for_profile(schema.profile)
        click.echo("searched with: " + (f"{visible(found.profile.describe())} (recorded in "
                                       "the layers; --embedder or sediment.toml overrides)"
                                       if found is not None else
                                       "the configured embedder (the layers record "
                                       f"{visible(str(schema.profile.get('backend')))}, "
                                       "which is never chosen without configuration)"))

"""Read-only commands: search, inspect, validate, layers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from sediment.cli._app import cli, emit_json, get_config, json_option, layer_options, open_layerset
from sediment.cli._embedder import build_embedder
from sediment.cli._ids import CHUNK_ID
from sediment.cli._review import signature_option
from sediment.errors import FormatError, ValidationError
from sediment.format import LayerFile
from sediment.ops.query import run_query, search_response
from sediment.ops.requests import SearchOptions, parse
from sediment.ops.rerank import STANDARD
from sediment.search import MAX_K
from sediment.search.fusion import DEFAULT_FUSION, FUSIONS
from sediment.store import LayerName
from sediment.store.foreign import foreign_ids


def _console() -> Console:
    """Rich output; piped output gets a wide fixed width instead of rich's 80 columns."""
    import sys

    width = None if sys.stdout.isatty() else 160
    return Console(soft_wrap=True, highlight=False, width=width)


def _snippet(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@cli.command()
@click.argument("query", required=False)
@click.option("-k", "k", type=int, default=10, show_default=True,
              help=f"Number of results (1 to {MAX_K}).")
@click.option("--kind", "kinds", multiple=True, help="Only chunks of this kind (repeatable).")
@click.option("--layers", "layers_csv", default=None,
              help="Comma-separated layers to search (default: base,user,delta,local).")
@click.option("--mode", type=click.Choice(["hybrid", "vector", "lexical"]), default="hybrid",
              show_default=True, help="Retrievers to use.")
@click.option("--metric", type=click.Choice(["cosine", "dot"]), default="cosine",
              show_default=True)
@click.option("--fusion", type=click.Choice(list(FUSIONS)), default=DEFAULT_FUSION,
              show_default=True, help="How vector and BM25 scores are merged (convex: "
                                      "0.5 x min-max BM25 + 0.5 x min-max cosine).")
@click.option("--rrf-k", type=float, default=60.0, show_default=True,
              help="The k constant of reciprocal rank fusion.")
@click.option("--vector-weight", type=float, default=None, help="Weight of the vector side.")
@click.option("--lexical-weight", type=float, default=None, help="Weight of the BM25 side.")
@click.option("--query-vec", default=None,
              help="A query vector as a JSON list of numbers, instead of embedding the text.")
@click.option("--include-meta", is_flag=True, help="Also return meta.* event chunks.")
@click.option("--exact", is_flag=True,
              help="Scan every vector even where an approximate index exists.")
@click.option("--embedder", "embedder_name", default=None,
              help="Embedder to use for the query (minilm, hash, openai).")
@click.option("--allow-mixed-schemas", "mixed_schemas", is_flag=True,
              help="With --mode lexical, also search layers whose vectors do not share a "
                   "schema (an error otherwise, RFC 8.3).")
@click.option("--explain", is_flag=True, help="Show how each score was made.")
@layer_options
@signature_option
@json_option
@click.pass_context
def search(ctx: click.Context, /, query: str | None, k: int, kinds: tuple[str, ...],
           layers_csv: str | None, mode: str, metric: str, fusion: str, rrf_k: float,
           vector_weight: float | None, lexical_weight: float | None, query_vec: str | None,
           include_meta: bool, exact: bool, embedder_name: str | None, mixed_schemas: bool,
           explain: bool, as_json: bool,
           layer_dir: Path | None, **paths: Path | None) -> None:
    """Search the layers with hybrid vector + BM25 retrieval."""
    cfg = get_config(ctx)
    layerset = open_layerset(cfg, layer_dir, **paths)
    vec = None
    if query_vec is not None:
        try:
            vec = json.loads(query_vec)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"--query-vec is not JSON: {exc.msg}") from exc
    elif query is None:
        raise click.UsageError("give a QUERY (non-empty), or --query-vec")
    params = parse(SearchOptions, {
        "query": query, "k": k, "filters": {"kind": list(kinds)} if kinds else None,
        "layers": None if layers_csv is None else [x.strip() for x in layers_csv.split(",")],
        "query_vec": vec, "mode": mode, "metric": metric, "fusion": fusion, "rrf_k": rrf_k,
        "vector_weight": vector_weight, "lexical_weight": lexical_weight,
        "include_meta": include_meta, "exact": exact, "explain": explain,
        "mixed_schemas": mixed_schemas})
    embedder = build_embedder(cfg, embedder_name) if params.needs_embedder else None
    result = run_query(layerset, params, embedder=embedder, rerankers=STANDARD)
    notice = foreign_ids(layerset) if explain else None
    if as_json:
        out = search_response(params, result)
        if explain:
            out["foreign_ids"] = notice.to_dict() if notice else None
        emit_json(out)
        return
    console = _console()
    if notice is not None:
        click.echo(f"warning: {notice.message}", err=True)
    if not result.layers:
        console.print("No layer files found (looked in "
                      f"{layer_dir or cfg.layer_dir}); run `sediment compile` first.")
        return
    if not result.hits:
        console.print(f"No results in {', '.join(n.value for n in result.layers)}.")
        return
    table = Table(show_lines=False, expand=False)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("layer")
    table.add_column("id", justify="right")
    table.add_column("kind")
    table.add_column("source", no_wrap=True)
    table.add_column("content", no_wrap=True, overflow="ellipsis", max_width=80)
    for i, h in enumerate(result.hits, 1):
        src = str(h.chunk.sources[0]) if h.chunk.sources else ""
        flag = " (!)" if h.conflicts else ""
        table.add_row(str(i), f"{h.score:.4f}", h.layer.value + flag, str(h.chunk.id),
                      h.chunk.kind, src, _snippet(h.chunk.content, 80))
    console.print(table)
    if any(h.conflicts for h in result.hits):
        console.print("(!) this result overrides a different version in a lower layer; "
                      "see --explain or --json")
    if explain:
        for i, h in enumerate(result.hits, 1):
            e = h.explanation()
            vs = "-" if e["vector_score"] is None else f"{e['vector_score']:.4f}"
            bs = "-" if e["bm25_score"] is None else f"{e['bm25_score']:.3f}"
            console.print(
                f"{i}. {e['layer']}:{h.chunk.id} vector {vs} (rank {e['vector_rank'] or '-'})"
                f", bm25 {bs} (rank {e['bm25_rank'] or '-'}), fused {e['fused_score']:.5f}"
                f", matched in {e['matched_layer']}"
                + (f", hides {', '.join(e['hidden_versions'])}" if e["hidden_versions"] else ""))
        t = result.timings_ms
        console.print("time: " + ", ".join(f"{k} {v:.1f} ms" for k, v in t.items()))


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
def inspect(path: Path | None, layer_path: Path | None, chunk_id: int | None,
            root: Path | None, as_json: bool) -> None:
    """Show a layer file's header, sections, counts and embedding profile, or with --id one
    chunk with its sources resolved and the proposals and decisions that refer to it."""
    if (path is None) == (layer_path is None):
        raise click.UsageError("give the layer file as PATH or as --layer FILE (one of them)")
    target = path or layer_path
    assert target is not None
    if chunk_id is not None:
        from sediment.cli._review import show_chunk

        show_chunk(target, chunk_id, root=root, as_json=as_json)
        return
    f = LayerFile.open(target)
    info = _describe_file(f)
    if as_json:
        emit_json(info)
        return
    console = _console()
    console.print(f"{target}: AGENTS.db v{info['version']}, {info['bytes']} bytes")
    table = Table("section", "offset", "length")
    for s in info["sections"]:
        table.add_row(s["kind"], str(s["offset"]), str(s["length"]))
    console.print(table)
    e = info["embedding"]
    console.print(f"chunks: {info['chunks']}  strings: {info['strings']}  relationships: "
                  f"{info['relationships']}")
    console.print(f"embeddings: {e['rows']} x {e['dim']} {e['element_type']}"
                  + (f" (scale {e['quant_scale']:g})" if e["element_type"] == "i8" else ""))
    console.print("kinds: " + (", ".join(f"{k} {v}" for k, v in info["kinds"].items()) or "-"))
    console.print("authors: " + (", ".join(f"{k} {v}" for k, v in info["authors"].items())
                                 or "-"))
    prof = (info["metadata"] or {}).get("embedding_profile")
    console.print("profile: " + (json.dumps(prof) if prof else "none recorded"))


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
                click.echo(f"{r['path']}: valid")
            else:
                click.echo(f"{r['path']}: INVALID ({len(r['violations'])} violation(s))")
                for v in r["violations"]:
                    where = f"offset {v['offset']}" if v["offset"] is not None else "-"
                    click.echo(f"  [{v['rule']}] {v['field']} at {where}: {v['message']}")
    if not all(r["valid"] for r in report):
        ctx.exit(1)


@cli.command()
@layer_options
@json_option
@click.pass_context
def layers(ctx: click.Context, /, as_json: bool, layer_dir: Path | None,
           **paths: Path | None) -> None:
    """List the layers of the set, in precedence order, and check they fit together."""
    cfg = get_config(ctx)
    ls = open_layerset(cfg, layer_dir, **paths)
    rows: list[dict[str, Any]] = []
    for name in (LayerName.LOCAL, LayerName.USER, LayerName.DELTA, LayerName.BASE):
        path = ls.paths.get(name)
        layer = ls.layer(name)
        f = layer.file if layer else None
        rows.append({
            "layer": name.value, "path": str(path) if path else None, "present": f is not None,
            "chunks": f.chunk_count if f else 0, "bytes": f.size if f else 0,
            "dim": f.dim if f else None, "element_type": f.element_type if f else None,
            "profile": f.embedding_profile if f else None,
        })
    schema = ls.schema()
    notice = foreign_ids(ls)
    if as_json:
        emit_json({"layers": rows, "compatible": True,
                   "schema": None if schema is None else
                   {"dim": schema.dim, "element_type": schema.element_type,
                    "profile": schema.profile},
                   "foreign_ids": notice.to_dict() if notice else None})
        return
    table = Table("layer", "chunks", "bytes", "vectors", "profile", "path")
    for r in rows:
        prof = r["profile"]
        table.add_row(r["layer"], str(r["chunks"]) if r["present"] else "-",
                      str(r["bytes"]) if r["present"] else "-",
                      f"{r['dim']} {r['element_type']}" if r["present"] else "-",
                      f"{prof['backend']}/{prof['model']}" if prof else "-",
                      (r["path"] or "") + ("" if r["present"] else " (absent)"))
    _console().print(table)
    _console().print("precedence: local > user > delta > base; schemas compatible")
    if notice is not None:
        click.echo(f"warning: {notice.message}", err=True)

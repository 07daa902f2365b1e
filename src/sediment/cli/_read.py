"""``sediment search``: hybrid search over the layers (rendered for people by _hits.py)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._hits import print_hits
from sediment.cli._options import (
    build_embedder,
    get_config,
    json_option,
    open_store,
    signature_option,
    store_layer_options,
)
from sediment.cli._output import emit_json, note, width
from sediment.errors import ValidationError
from sediment.ops.query import run_query, search_response
from sediment.ops.requests import SearchOptions, parse
from sediment.ops.rerank import STANDARD
from sediment.search import MAX_K
from sediment.search.fusion import DEFAULT_FUSION, FUSIONS
from sediment.store import LayerName
from sediment.store.foreign import foreign_ids


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
@click.option("--rrf-k", type=click.FloatRange(min=1.0), default=60.0, show_default=True,
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
@click.option("--full", is_flag=True, help="Show whole chunks instead of two lines each.")
@store_layer_options
@signature_option
@json_option
@click.pass_context
def search(ctx: click.Context, /, query: str | None, k: int, kinds: tuple[str, ...],
           layers_csv: str | None, mode: str, metric: str, fusion: str, rrf_k: float,
           vector_weight: float | None, lexical_weight: float | None, query_vec: str | None,
           include_meta: bool, exact: bool, embedder_name: str | None, mixed_schemas: bool,
           explain: bool, full: bool, as_json: bool, store: str | None,
           layer_dir: Path | None, **paths: Path | None) -> None:
    """Search the layers with hybrid vector + BM25 retrieval."""
    cfg = get_config(ctx)
    layerset = open_store(cfg, store, layer_dir, paths)
    layer_list = None
    if layers_csv is not None:
        layer_list = [x.strip() for x in layers_csv.split(",")]
        if not any(layer_list):
            raise ValidationError("--layers is empty: name at least one of base, user, "
                                  "delta, local")
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
        "layers": layer_list, "query_vec": vec, "mode": mode, "metric": metric,
        "fusion": fusion, "rrf_k": rrf_k, "vector_weight": vector_weight,
        "lexical_weight": lexical_weight, "include_meta": include_meta, "exact": exact,
        "explain": explain, "mixed_schemas": mixed_schemas})
    names = None if params.layers is None else tuple(LayerName(x) for x in params.layers)
    embedder = (build_embedder(cfg, embedder_name, layerset=layerset, names=names)
                if params.needs_embedder else None)
    result = run_query(layerset, params, embedder=embedder, rerankers=STANDARD)
    files = layerset.layer_files()
    notice = foreign_ids(files) if explain and files is not None else None
    if as_json:
        out = search_response(params, result)
        if explain:
            out["foreign_ids"] = notice.to_dict() if notice else None
        emit_json(out)
        return
    if notice is not None:
        note(f"warning: {notice.message}")
    if not result.layers:
        note("No layer files found (looked in "
             f"{layer_dir or cfg.layer_dir}); run `sediment compile` first.")
        return
    if not result.hits:
        click.echo(f"No results in {', '.join(n.value for n in result.layers)}.")
        return
    print_hits(result.hits, full=full, explain=explain)
    if explain:
        if embedder is not None:
            for line in textwrap.wrap(f"embedder: {embedder.profile.describe()}", width(),
                                      subsequent_indent="  ", break_on_hyphens=False):
                click.echo(line)
        t = result.timings_ms
        click.echo("time: " + ", ".join(f"{k} {v:.1f} ms" for k, v in t.items()))

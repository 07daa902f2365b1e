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
    layer_options,
    open_layerset,
    signature_option,
)
from sediment.cli._output import emit_json, note, width
from sediment.errors import ValidationError
from sediment.ops.query import run_search
from sediment.search import MAX_K, SearchRequest, make_fusion
from sediment.search.fusion import DEFAULT_FUSION, FUSIONS
from sediment.store import LayerName


@cli.command()
@click.argument("query", required=False)
@click.option("-k", "k", type=click.IntRange(1, MAX_K), default=10, show_default=True,
              help="Number of results.")
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
@click.option("--explain", is_flag=True, help="Show how each score was made.")
@click.option("--full", is_flag=True, help="Show whole chunks instead of two lines each.")
@layer_options
@signature_option
@json_option
@click.pass_context
def search(ctx: click.Context, /, query: str | None, k: int, kinds: tuple[str, ...],
           layers_csv: str | None, mode: str, metric: str, fusion: str, rrf_k: float,
           vector_weight: float | None, lexical_weight: float | None, query_vec: str | None,
           include_meta: bool, exact: bool, embedder_name: str | None, explain: bool,
           full: bool, as_json: bool,
           layer_dir: Path | None, **paths: Path | None) -> None:
    """Search the layers with hybrid vector + BM25 retrieval."""
    cfg = get_config(ctx)
    layerset = open_layerset(cfg, layer_dir, **paths)
    layers = None
    if layers_csv is not None:
        layers = tuple(LayerName.parse(x) for x in layers_csv.split(",") if x.strip())
        if not layers:
            raise ValidationError("--layers is empty: name at least one of base, user, "
                                  "delta, local")
    vec = None
    if query_vec is not None:
        try:
            vec = json.loads(query_vec)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"--query-vec is not JSON: {exc.msg}") from exc
        if not isinstance(vec, list) or not all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in vec):
            raise ValidationError("--query-vec must be a JSON list of numbers")
    elif not query or not query.strip():
        raise click.UsageError("give a QUERY (non-empty), or --query-vec")
    request = SearchRequest(
        text=query, k=k, kinds=tuple(kinds) or None, layers=layers, include_meta=include_meta,
        exact=exact,
        mode=mode,  # type: ignore[arg-type]
        metric=metric,  # type: ignore[arg-type]
        fusion=make_fusion(fusion, k=rrf_k, vector_weight=vector_weight,
                           lexical_weight=lexical_weight))
    embedder = (build_embedder(cfg, embedder_name, layerset=layerset, names=layers)
                if vec is None and mode != "lexical" else None)
    result = run_search(layerset, request, embedder=embedder, query_vec=vec)
    if as_json:
        emit_json({"query": query, "layers": [n.value for n in result.layers],
                   "results": [h.to_dict(explain=explain) for h in result.hits],
                   "timings_ms": result.timings_ms if explain else None})
        return
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

"""``sediment context ...``: the agent-loop context tools from a shell (docs/context.md).

Each command is the MCP tool of the same job, over the same service, with ``--json``.
Item text is untrusted: printed with control characters escaped.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from sediment.cli._app import cli
from sediment.cli._options import get_config, json_option, own_actor, store_option
from sediment.cli._output import emit_json, visible
from sediment.cli._workspace import open_workspace
from sediment.context import CONTEXT_TYPES, ContextLoop, resolve
from sediment.context.skills import (
    read_ace,
    read_agent_skills,
    write_ace,
    write_agent_skills,
)
from sediment.context.tokens import SAFETY_MARGIN, tokenizer_name
from sediment.errors import ValidationError


def _loop(ctx: click.Context, store: str | None, layer_dir: Path | None,
          embedder_name: str | None, actor: str | None) -> ContextLoop:
    """The loop of the actor's context: the layer directory's, or with ``--store`` the
    actor's rows of the PostgreSQL store (cli/_team.py); pending access counts are written
    when the command ends."""
    ws = ctx.with_resource(open_workspace(get_config(ctx), store, layer_dir, embedder_name))
    return ws.context.of(actor or own_actor())


def _common(f: Any) -> Any:
    f = click.option("--actor", default=None, envvar="SEDIMENT_ACTOR",
                     help="Act as this actor (default: the OS user).")(f)
    f = click.option("--embedder", "embedder_name", default=None,
                     help="Embedder (minilm, hash, openai); default from config.")(f)
    f = store_option(f)
    f = click.option("--dir", "layer_dir", type=click.Path(path_type=Path), default=None,
                     help="The project's layer directory (default: from config).")(f)
    return click.pass_context(json_option(f))


def _items(rows: list[dict[str, Any]]) -> None:
    if not rows:
        click.echo("No context items.")
    for i, d in enumerate(rows, 1):
        score = f", score {d['score']:.3f}" if "score" in d else ""
        click.echo(f"{i}. [{d['id']} {d['type']}, {d['state']}, iteration {d['iteration']}, "
                   f"usefulness {d['usefulness']:.2f}{score}]")
        for line in visible(d["content"], keep_lines=True).splitlines() or [""]:
            click.echo(f"    {line}")


def _warn(out: dict[str, Any]) -> None:
    for w in out.get("warnings", []):
        click.echo(f"Warning: {visible(w)}", err=True)


@cli.group()
def context() -> None:
    """Context for agent loops: store iterations and context, get the relevant items
    within a token budget, give feedback, summarize, prune, import and export skills."""


@context.command(name="relevant")
@click.argument("query")
@click.option("--max-items", type=click.IntRange(1, 50), default=10, show_default=True)
@click.option("--type", "types", type=click.Choice(CONTEXT_TYPES), multiple=True)
@click.option("--min-score", type=click.FloatRange(0, 1), default=0.3, show_default=True)
@click.option("--run", "run_id", default=None,
              help="Only this loop's items (and the skills of every run, see below).")
@click.option("--archived", is_flag=True, help="Search the archive too.")
@click.option("--skills-across-runs/--run-skills-only", "across", default=None,
              help="With --run: also the skills of other runs, or only the run's "
                   "(default: [context] skills_across_runs, true).")
@_common
def relevant_cmd(ctx: click.Context, /, query: str, max_items: int, types: tuple[str, ...],
                 min_score: float, run_id: str | None, archived: bool, across: bool | None,
                 actor: str | None, embedder_name: str | None,
                 store: str | None, layer_dir: Path | None, as_json: bool) -> None:
    """The items most relevant to QUERY, each with its four ranking factors."""
    out = _loop(ctx, store, layer_dir, embedder_name, actor).get_relevant_context(
        actor or own_actor(), query, max_items, list(types) or None, min_score,
        None, run_id, archived, across)
    if as_json:
        emit_json(out)
        return
    _warn(out)
    _items(out["items"])


@context.command(name="inject")
@click.argument("query")
@click.option("--max-tokens", type=click.IntRange(16, 200_000), default=None,
              help="Token budget (default: [context] max_context_tokens).")
@click.option("--max-items", type=click.IntRange(1, 50), default=None)
@click.option("--type", "types", type=click.Choice(CONTEXT_TYPES), multiple=True)
@click.option("--min-score", type=click.FloatRange(0, 1), default=None)
@click.option("--run", "run_id", default=None)
@click.option("--skills-across-runs/--run-skills-only", "across", default=None,
              help="With --run: also the skills of other runs, or only the run's "
                   "(default: [context] skills_across_runs, true).")
@_common
def inject_cmd(ctx: click.Context, /, query: str, max_tokens: int | None,
               max_items: int | None, types: tuple[str, ...], min_score: float | None,
               run_id: str | None, across: bool | None, actor: str | None,
               embedder_name: str | None,
               store: str | None, layer_dir: Path | None, as_json: bool) -> None:
    """Print the Markdown block to inject into the next iteration's prompt."""
    loop = _loop(ctx, store, layer_dir, embedder_name, actor)
    s = loop.settings
    out = loop.get_relevant_context(
        actor or own_actor(), query, max_items or s.max_items_per_query,
        list(types) or list(s.context_types), s.min_relevance_score if min_score is None
        else min_score, max_tokens or s.max_context_tokens, run_id, False, across)
    if as_json:
        emit_json(out)
        return
    _warn(out)
    click.echo(visible(out["block"], keep_lines=True), nl=False)


@context.command(name="store")
@click.argument("content")
@click.option("--type", "context_type", type=click.Choice(CONTEXT_TYPES), required=True)
@click.option("--tag", "tags", multiple=True)
@click.option("--metadata", default=None, help="A JSON object.")
@click.option("--run", "run_id", default="default", show_default=True)
@_common
def store_cmd(ctx: click.Context, /, content: str, context_type: str, tags: tuple[str, ...],
              metadata: str | None, run_id: str, actor: str | None,
              embedder_name: str | None,
              store: str | None, layer_dir: Path | None, as_json: bool) -> None:
    """Store CONTENT as a context item (credentials are refused)."""
    meta = None
    if metadata is not None:
        try:
            meta = json.loads(metadata)
        except ValueError as exc:
            raise ValidationError(f"--metadata: not JSON: {exc}") from None
        if not isinstance(meta, dict):
            raise ValidationError("--metadata: must be a JSON object")
    out = _loop(ctx, store, layer_dir, embedder_name, actor).store_context(
        actor or own_actor(), content, context_type, tags, meta, run_id)
    if as_json:
        emit_json(out)
    else:
        click.echo(f"stored {out['id']} ({context_type}, iteration {out['iteration']})")


@context.command(name="iteration")
@click.argument("iteration", type=click.IntRange(0))
@click.argument("summary")
@click.option("--failed", is_flag=True, help="The iteration failed.")
@click.option("--error", default=None)
@click.option("--duration-ms", type=click.IntRange(0), default=0)
@click.option("--tokens-used", type=click.IntRange(0), default=0)
@click.option("--cost", type=click.FloatRange(0), default=0.0)
@click.option("--run", "run_id", default="default", show_default=True)
@_common
def iteration_cmd(ctx: click.Context, /, iteration: int, summary: str, failed: bool,
                  error: str | None, duration_ms: int, tokens_used: int, cost: float,
                  run_id: str, actor: str | None, embedder_name: str | None,
                  store: str | None, layer_dir: Path | None, as_json: bool) -> None:
    """Record the result of ITERATION."""
    out = _loop(ctx, store, layer_dir, embedder_name, actor).store_iteration_result(
        actor or own_actor(), iteration, summary, not failed, duration_ms, tokens_used,
        cost, (), (), error, run_id)
    if as_json:
        emit_json(out)
    else:
        click.echo(f"stored iteration {iteration} as {out['id']}")


@context.command(name="history")
@click.option("--last", "last_n", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option("--run", "run_id", default="default", show_default=True)
@_common
def history_cmd(ctx: click.Context, /, last_n: int, run_id: str, actor: str | None,
                embedder_name: str | None,
                store: str | None, layer_dir: Path | None, as_json: bool) -> None:
    """The last iterations of a run."""
    out = _loop(ctx, store, layer_dir, embedder_name, actor).get_iteration_history(
        actor or own_actor(), last_n, run_id)
    if as_json:
        emit_json(out)
    else:
        _items(out["iterations"])


@context.command(name="skills")
@click.option("--tag", "tags", multiple=True)
@click.option("--min-score", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="Minimum usefulness.")
@_common
def skills_cmd(ctx: click.Context, /, tags: tuple[str, ...], min_score: float,
               actor: str | None, embedder_name: str | None,
               store: str | None, layer_dir: Path | None,
               as_json: bool) -> None:
    """Skills, most useful first."""
    out = _loop(ctx, store, layer_dir, embedder_name, actor).get_skills(
        actor or own_actor(), list(tags) or None, min_score)
    if as_json:
        emit_json(out)
    else:
        _items(out["skills"])


@context.command(name="mark")
@click.argument("item_id")
@click.option("--helpful/--not-helpful", required=True)
@click.option("--reason", default=None)
@_common
def mark_cmd(ctx: click.Context, /, item_id: str, helpful: bool, reason: str | None,
             actor: str | None, embedder_name: str | None,
             store: str | None, layer_dir: Path | None,
             as_json: bool) -> None:
    """Record whether ITEM_ID helped."""
    out = _loop(ctx, store, layer_dir, embedder_name, actor).mark_useful(
        actor or own_actor(), item_id, helpful, reason)
    if as_json:
        emit_json(out)
    else:
        click.echo(f"{out['id']}: usefulness {out['usefulness']:.2f}")


@context.command(name="summarize")
@click.option("--older-than", "older", type=click.IntRange(1), default=20, show_default=True)
@click.option("--run", "run_id", default=None)
@_common
def summarize_cmd(ctx: click.Context, /, older: int, run_id: str | None, actor: str | None,
                  embedder_name: str | None,
                  store: str | None, layer_dir: Path | None, as_json: bool) -> None:
    """Summarize items older than N iterations and archive the oldest."""
    out = _loop(ctx, store, layer_dir, embedder_name, actor).summarize_old_context(
        actor or own_actor(), older, run_id)
    if as_json:
        emit_json(out)
    else:
        click.echo(f"summarized {out['summarized']} items into {len(out['summaries'])} "
                   f"summaries; archived {out['archived']}; pruned {len(out['pruned'])}")


@context.command(name="prune")
@click.option("--min-score", type=click.FloatRange(0, 1), default=0.3, show_default=True)
@_common
def prune_cmd(ctx: click.Context, /, min_score: float, actor: str | None,
              embedder_name: str | None,
              store: str | None, layer_dir: Path | None, as_json: bool) -> None:
    """Forget low-value and expired items (never helpful skills).

    Low value: usefulness under --min-score. Expired: older than [context]
    prune_after_iterations and never marked helpful.
    """
    loop = _loop(ctx, store, layer_dir, embedder_name, actor)
    out = loop.prune(actor or own_actor(), min_score)
    if as_json:
        emit_json(out)
        return
    click.echo(f"removed {out['count']} items")
    for d in out["removed"]:
        click.echo(f"  {d['id']} {d['type']} ({d['reason']}): {visible(d['content'][:70])}")


@context.command(name="stats")
@_common
def stats_cmd(ctx: click.Context, /, actor: str | None, embedder_name: str | None,
              store: str | None, layer_dir: Path | None, as_json: bool) -> None:
    """Counts by type and lifecycle state, feedback, runs and size."""
    out = _loop(ctx, store, layer_dir, embedder_name, actor).stats(actor or own_actor())
    if as_json:
        emit_json(out)
        return
    for key in ("total", "by_type", "by_state", "hidden", "feedback", "runs", "size_bytes"):
        click.echo(f"{key}: {out[key]}")


@context.command(name="health")
@_common
def health_cmd(ctx: click.Context, /, actor: str | None, embedder_name: str | None,
               store: str | None, layer_dir: Path | None, as_json: bool) -> None:
    """Whether the store, the embedder and the tokenizer work."""
    out = _loop(ctx, store, layer_dir, embedder_name, actor).health()
    if as_json:
        emit_json(out)
        return
    click.echo(out["status"])
    for k, v in out["checks"].items():
        click.echo(f"  {k}: {visible(v)}")


@context.command(name="config")
@click.pass_context
@json_option
def config_cmd(ctx: click.Context, /, as_json: bool) -> None:
    """The effective [context] settings and where each came from."""
    settings, origin = resolve(get_config(ctx).context)
    values = asdict(settings)
    if as_json:
        emit_json({"settings": {k: {"value": v, "from": origin[k]} for k, v in values.items()},
                   "tokenizer": tokenizer_name(), "safety_margin": SAFETY_MARGIN})
        return
    for k, v in values.items():
        click.echo(f"{k} = {v!r}  ({visible(origin[k])})")


@context.command(name="import-skills")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@_common
def import_cmd(ctx: click.Context, /, source: Path, actor: str | None,
               embedder_name: str | None,
               store: str | None, layer_dir: Path | None, as_json: bool) -> None:
    """Import an ACE skillbook (a .json file) or an Agent Skills folder (*/SKILL.md)."""
    skills = read_agent_skills(source) if source.is_dir() else read_ace(source)
    loop = _loop(ctx, store, layer_dir, embedder_name, actor)
    out = loop.import_skills(actor or own_actor(), skills)
    if as_json:
        emit_json(out)
    else:
        click.echo(f"imported {out['imported']} skills")


@context.command(name="export-skills")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["ace", "agent-skills"]), default="ace",
              show_default=True)
@_common
def export_cmd(ctx: click.Context, /, target: Path, fmt: str, actor: str | None,
               embedder_name: str | None,
               store: str | None, layer_dir: Path | None, as_json: bool) -> None:
    """Export your skills as an ACE skillbook file or an Agent Skills folder."""
    rows = _loop(ctx, store, layer_dir, embedder_name, actor).get_skills(actor or own_actor(),
                                                            None, 0.0)["skills"]
    n = write_ace(target, rows) if fmt == "ace" else write_agent_skills(target, rows)
    if as_json:
        emit_json({"exported": n, "target": str(target), "format": fmt})
    else:
        click.echo(f"exported {n} skills to {target}")

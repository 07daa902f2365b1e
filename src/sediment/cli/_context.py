"""``sediment context ...``: the agent-loop context tools from a shell (docs/context.md).

Each command is the MCP tool of the same job, over the same service, with ``--json``.
Item text is untrusted: printed with control characters escaped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from sediment.cli._app import cli
from sediment.cli._options import embedder_option, get_config, json_option, store_option
from sediment.cli._output import emit_json, visible
from sediment.cli._workspace import Answer, service_command
from sediment.context import CONTEXT_TYPES, ContextLoop, resolve
from sediment.context.skills import (
    read_ace,
    read_agent_skills,
    write_ace,
    write_agent_skills,
)
from sediment.context.tokens import SAFETY_MARGIN, tokenizer_name
from sediment.errors import ValidationError


def _options(f: Callable[..., None]) -> Callable[..., None]:
    f = click.option("--actor", default=None, envvar="SEDIMENT_ACTOR",
                     help="Act as this actor (default: the OS user).")(f)
    f = embedder_option(f)
    f = store_option(f)
    f = click.option("--dir", "layer_dir", type=click.Path(path_type=Path), default=None,
                     help="The project's layer directory (default: from config).")(f)
    return click.pass_context(json_option(f))


def _command(text: Callable[[Answer], None]
             ) -> Callable[[Callable[..., Answer]], Callable[..., None]]:
    """A context command over the loop of the actor's context (the layer directory's, or
    with ``--store`` the actor's rows of the PostgreSQL store, cli/_team.py)."""
    return service_command(lambda ws, who: ws.context.of(who), _options, text)


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


def _relevant(out: Answer) -> None:
    _warn(out)
    _items(out["items"])


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
@_command(_relevant)
def relevant_cmd(loop: ContextLoop, actor: str, /, query: str, max_items: int,
                 types: tuple[str, ...], min_score: float, run_id: str | None,
                 archived: bool, across: bool | None) -> Answer:
    """The items most relevant to QUERY, each with its four ranking factors."""
    return loop.get_relevant_context(actor, query, max_items, list(types) or None, min_score,
                                     None, run_id, archived, across)


def _injected(out: Answer) -> None:
    _warn(out)
    click.echo(visible(out["block"], keep_lines=True), nl=False)


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
@_command(_injected)
def inject_cmd(loop: ContextLoop, actor: str, /, query: str, max_tokens: int | None,
               max_items: int | None, types: tuple[str, ...], min_score: float | None,
               run_id: str | None, across: bool | None) -> Answer:
    """Print the Markdown block to inject into the next iteration's prompt."""
    s = loop.settings
    return loop.get_relevant_context(
        actor, query, max_items or s.max_items_per_query,
        list(types) or list(s.context_types), s.min_relevance_score if min_score is None
        else min_score, max_tokens or s.max_context_tokens, run_id, False, across)


@context.command(name="store")
@click.argument("content")
@click.option("--type", "context_type", type=click.Choice(CONTEXT_TYPES), required=True)
@click.option("--tag", "tags", multiple=True)
@click.option("--metadata", default=None, help="A JSON object.")
@click.option("--run", "run_id", default="default", show_default=True)
@_command(lambda out: click.echo(f"stored {out['id']} ({out['context_type']}, iteration "
                                 f"{out['iteration']})"))
def store_cmd(loop: ContextLoop, actor: str, /, content: str, context_type: str,
              tags: tuple[str, ...], metadata: str | None, run_id: str) -> Answer:
    """Store CONTENT as a context item (credentials are refused)."""
    meta = None
    if metadata is not None:
        try:
            meta = json.loads(metadata)
        except ValueError as exc:
            raise ValidationError(f"--metadata: not JSON: {exc}") from None
        if not isinstance(meta, dict):
            raise ValidationError("--metadata: must be a JSON object")
    return loop.store_context(actor, content, context_type, tags, meta, run_id)


@context.command(name="iteration")
@click.argument("iteration", type=click.IntRange(0))
@click.argument("summary")
@click.option("--failed", is_flag=True, help="The iteration failed.")
@click.option("--error", default=None)
@click.option("--duration-ms", type=click.IntRange(0), default=0)
@click.option("--tokens-used", type=click.IntRange(0), default=0)
@click.option("--cost", type=click.FloatRange(0), default=0.0)
@click.option("--run", "run_id", default="default", show_default=True)
@_command(lambda out: click.echo(f"stored iteration {out['iteration']} as {out['id']}"))
def iteration_cmd(loop: ContextLoop, actor: str, /, iteration: int, summary: str,
                  failed: bool, error: str | None, duration_ms: int, tokens_used: int,
                  cost: float, run_id: str) -> Answer:
    """Record the result of ITERATION."""
    return loop.store_iteration_result(actor, iteration, summary, not failed, duration_ms,
                                       tokens_used, cost, (), (), error, run_id)


@context.command(name="history")
@click.option("--last", "last_n", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option("--run", "run_id", default="default", show_default=True)
@_command(lambda out: _items(out["iterations"]))
def history_cmd(loop: ContextLoop, actor: str, /, last_n: int, run_id: str) -> Answer:
    """The last iterations of a run."""
    return loop.get_iteration_history(actor, last_n, run_id)


@context.command(name="skills")
@click.option("--tag", "tags", multiple=True)
@click.option("--min-score", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="Minimum usefulness.")
@_command(lambda out: _items(out["skills"]))
def skills_cmd(loop: ContextLoop, actor: str, /, tags: tuple[str, ...],
               min_score: float) -> Answer:
    """Skills, most useful first."""
    return loop.get_skills(actor, list(tags) or None, min_score)


@context.command(name="mark")
@click.argument("item_id")
@click.option("--helpful/--not-helpful", required=True)
@click.option("--reason", default=None)
@_command(lambda out: click.echo(f"{out['id']}: usefulness {out['usefulness']:.2f}"))
def mark_cmd(loop: ContextLoop, actor: str, /, item_id: str, helpful: bool,
             reason: str | None) -> Answer:
    """Record whether ITEM_ID helped."""
    return loop.mark_useful(actor, item_id, helpful, reason)


@context.command(name="summarize")
@click.option("--older-than", "older", type=click.IntRange(1), default=20, show_default=True)
@click.option("--run", "run_id", default=None)
@_command(lambda out: click.echo(
    f"summarized {out['summarized']} items into {len(out['summaries'])} summaries; "
    f"archived {out['archived']}; pruned {len(out['pruned'])}"))
def summarize_cmd(loop: ContextLoop, actor: str, /, older: int, run_id: str | None
                  ) -> Answer:
    """Summarize items older than N iterations and archive the oldest."""
    return loop.summarize_old_context(actor, older, run_id)


def _pruned(out: Answer) -> None:
    click.echo(f"removed {out['count']} items")
    for d in out["removed"]:
        click.echo(f"  {d['id']} {d['type']} ({d['reason']}): {visible(d['content'][:70])}")


@context.command(name="prune")
@click.option("--min-score", type=click.FloatRange(0, 1), default=0.3, show_default=True)
@_command(_pruned)
def prune_cmd(loop: ContextLoop, actor: str, /, min_score: float) -> Answer:
    """Forget low-value and expired items (never helpful skills).

    Low value: usefulness under --min-score. Expired: older than [context]
    prune_after_iterations and never marked helpful.
    """
    return loop.prune(actor, min_score)


def _stats(out: Answer) -> None:
    for key in ("total", "by_type", "by_state", "hidden", "feedback", "runs", "size_bytes"):
        click.echo(f"{key}: {out[key]}")


@context.command(name="stats")
@_command(_stats)
def stats_cmd(loop: ContextLoop, actor: str, /) -> Answer:
    """Counts by type and lifecycle state, feedback, runs and size."""
    return loop.stats(actor)


def _health(out: Answer) -> None:
    click.echo(out["status"])
    for k, v in out["checks"].items():
        click.echo(f"  {k}: {visible(v)}")


@context.command(name="health")
@_command(_health)
def health_cmd(loop: ContextLoop, actor: str, /) -> Answer:
    """Whether the store, the embedder and the tokenizer work."""
    return loop.health()


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
@_command(lambda out: click.echo(f"imported {out['imported']} skills"))
def import_cmd(loop: ContextLoop, actor: str, /, source: Path) -> Answer:
    """Import an ACE skillbook (a .json file) or an Agent Skills folder (*/SKILL.md)."""
    skills = read_agent_skills(source) if source.is_dir() else read_ace(source)
    return loop.import_skills(actor, skills)


@context.command(name="export-skills")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["ace", "agent-skills"]), default="ace",
              show_default=True)
@_command(lambda out: click.echo(f"exported {out['exported']} skills to {out['target']}"))
def export_cmd(loop: ContextLoop, actor: str, /, target: Path, fmt: str) -> Answer:
    """Export your skills as an ACE skillbook file or an Agent Skills folder."""
    rows = loop.get_skills(actor, None, 0.0)["skills"]
    n = write_ace(target, rows) if fmt == "ace" else write_agent_skills(target, rows)
    return {"exported": n, "target": str(target), "format": fmt}

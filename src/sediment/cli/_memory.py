"""``sediment memory ...``: a person's view of what agents remember (docs/memory.md).

Commands act as ``--actor`` (or ``SEDIMENT_ACTOR``, else the OS user) and as a human: a
global save writes the global memory directly, and global memories can be changed. Memory
text is untrusted: it is printed literally, with control characters escaped. With
``--store URL`` the same commands work on a PostgreSQL store's memories (cli/_team.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from sediment.cli._app import cli
from sediment.cli._options import (
    get_config,
    json_option,
    own_actor,
    store_layer_options,
)
from sediment.cli._output import emit_json, visible
from sediment.cli._workspace import open_workspace
from sediment.memory import CATEGORIES, MAX_LIMIT, MemoryService

SCOPES = ("user", "project", "global")


def safe(text: object) -> str:
    """Untrusted text for a terminal: control and bidirectional characters escaped;
    newlines and tabs kept."""
    return visible(str(text), keep_lines=True)


def actor_option(f: Any) -> Any:
    return click.option("--actor", default=None, envvar="SEDIMENT_ACTOR",
                        help="Act as this actor (default: the OS user; env SEDIMENT_ACTOR). "
                             "A convenience on one machine, not a security boundary.")(f)


def embedder_option(f: Any) -> Any:
    return click.option("--embedder", "embedder_name", default=None,
                        help="Embedder (minilm, hash, openai); default from config.")(f)


@contextmanager
def _service(ctx: click.Context, store: str | None, layer_dir: Path | None,
             embedder_name: str | None, paths: dict[str, Path | None]
             ) -> Iterator[MemoryService]:
    """The memories of the layer files, or with ``--store`` of a PostgreSQL store's
    project and the actor's own memories, which follow them across projects."""
    with open_workspace(get_config(ctx), store, layer_dir, embedder_name, paths) as ws:
        yield ws.memory


def _common(f: Any) -> Any:
    for deco in (click.pass_context, json_option, store_layer_options, embedder_option,
                 actor_option):
        f = deco(f)
    return f


def _show_memory(m: dict[str, Any], i: int | None = None) -> None:
    head = f"{i}. " if i is not None else ""
    bits = [m["id"], m["category"], m["scope"], f"confidence {m['confidence']:.2f}",
            f"used {m['use_count']}x"]
    if m.get("context"):
        bits.append(f"context {safe(m['context'])}")
    if m.get("pending"):
        bits.append("pending review")
    if m.get("score") is not None:
        bits.append(f"score {m['score']:.3f}")
    click.echo(f"{head}[{', '.join(bits)}]")
    for line in safe(m["content"]).splitlines() or [""]:
        click.echo(f"    {line}")


@cli.group()
def memory() -> None:
    """See, correct and erase what agents remember (save, recall, list, show, update,
    forget, forget-all, contexts, purge)."""


@memory.command(name="save")
@click.argument("content")
@click.option("--category", type=click.Choice(CATEGORIES), required=True)
@click.option("--source", type=click.Choice(["explicit", "inferred", "corrected"]),
              default="explicit", show_default=True,
              help="How it was learned (sets confidence 1.0 / 0.7 / 0.9).")
@click.option("--scope", type=click.Choice(SCOPES), default="user", show_default=True,
              help="user (your own store), project (this project), global (everyone "
                   "sharing the project; written directly by a human).")
@click.option("--context", "context_name", default=None, help="Memory context to file it in.")
@click.option("--related", "related", multiple=True,
              help="A chunk id, KCP unit id or 'path:line' it relates to (repeatable).")
@_common
def save_cmd(ctx: click.Context, /, content: str, category: str, source: str, scope: str,
             context_name: str | None, related: tuple[str, ...], actor: str | None,
             embedder_name: str | None, store: str | None, layer_dir: Path | None, as_json: bool,
             **paths: Path | None) -> None:
    """Save a memory (a near-duplicate of one of yours in the scope is superseded)."""
    with _service(ctx, store, layer_dir, embedder_name, paths) as svc:
        out = svc.save(actor or own_actor(), content, category, source, scope,
                       context_name, list(related) or None, human=True)
    if as_json:
        emit_json(out)
    elif out["status"] == "updated":
        kind = "correction" if out["looks_like_correction"] else "restatement"
        click.echo(f"updated: {out['id']} supersedes {out['superseded_id']} (similarity "
                   f"{out['similarity']:.2f}, looks like a {kind}"
                   + (f": {', '.join(out['correction_signals'])} differ" if
                      out["correction_signals"] else "") + ")")
    else:
        click.echo(f"{out['status']}: {out['id']} ({out['category']}, {out['scope']})")


@memory.command(name="recall")
@click.argument("query")
@click.option("--category", type=click.Choice(CATEGORIES), default=None)
@click.option("--scope", type=click.Choice(SCOPES), default=None)
@click.option("--limit", type=click.IntRange(1, MAX_LIMIT), default=10, show_default=True)
@click.option("--min-score", type=click.FloatRange(0.0, 1.0), default=None,
              help="Leave out memories scoring under this (default: the embedder's floor, "
                   "0.2 with MiniLM; 0 shows every match).")
@_common
def recall_cmd(ctx: click.Context, /, query: str, category: str | None, scope: str | None,
               limit: int, min_score: float | None, actor: str | None,
               embedder_name: str | None,
               store: str | None, layer_dir: Path | None, as_json: bool,
               **paths: Path | None) -> None:
    """Find your memories relevant to QUERY (counts a use of each one shown)."""
    with _service(ctx, store, layer_dir, embedder_name, paths) as svc:
        out = svc.recall(actor or own_actor(), query, category, scope, limit, min_score)
    if as_json:
        emit_json(out)
        return
    if not out["memories"]:
        click.echo(f"no memory is relevant enough (none scores {out['min_score']} or more)")
    for i, m in enumerate(out["memories"], 1):
        _show_memory(m, i)


@memory.command(name="list")
@click.option("--category", type=click.Choice(CATEGORIES), default=None)
@click.option("--scope", type=click.Choice(SCOPES), default=None)
@click.option("--limit", type=click.IntRange(1, 10_000), default=20, show_default=True)
@_common
def list_cmd(ctx: click.Context, /, category: str | None, scope: str | None, limit: int,
             actor: str | None, embedder_name: str | None, store: str | None,
             layer_dir: Path | None, as_json: bool, **paths: Path | None) -> None:
    """List your active memories, most used first, then newest."""
    with _service(ctx, store, layer_dir, embedder_name, paths) as svc:
        out = svc.list_memories(actor or own_actor(), category, limit, scope)
    if as_json:
        emit_json(out)
        return
    click.echo(f"{out['total']} memories" + (f" (showing {len(out['memories'])})"
                                             if out["total"] > len(out["memories"]) else ""))
    for m in out["memories"]:
        _show_memory(m)


@memory.command(name="show")
@click.argument("memory_id")
@_common
def show_cmd(ctx: click.Context, /, memory_id: str, actor: str | None,
             embedder_name: str | None, store: str | None, layer_dir: Path | None, as_json: bool,
             **paths: Path | None) -> None:
    """Show a memory, its versions (the supersession chain), context, relationships and
    use history."""
    with _service(ctx, store, layer_dir, embedder_name, paths) as svc:
        out = svc.show(actor or own_actor(), memory_id)
    if as_json:
        emit_json(out)
        return
    m = out["memory"]
    _show_memory(m)
    state = "forgotten" if m["forgotten"] else (
        f"superseded by {m['superseded_by']}" if m["superseded_by"] else "active")
    click.echo(f"state: {state}; source {m['source']}; by {m['author']} as {m['actor']}")
    if out["context"]:
        c = out["context"]
        click.echo(f"context: {safe(c['name'])} (priority {c['priority']:.2f}) "
                   f"{safe(c['description'])}".rstrip())
    if out["related_to"]:
        click.echo("related to: " + ", ".join(safe(r) for r in out["related_to"]))
    if len(out["versions"]) > 1:
        click.echo("versions (newest first):")
        for v in out["versions"]:
            why = v.get("superseded_because") or {}
            note = f" ({why.get('reason')})" if why else ""
            click.echo(f"  {v['id']}{note}: {safe(v['content'])[:200]}")
    for h in out["use_history"]:
        click.echo(f"used {h['count']}x (last at {h['at_ms']})"
                   + (" pending" if h.get("pending") else ""))


@memory.command(name="update")
@click.argument("memory_id")
@click.option("--content", default=None, help="New text.")
@click.option("--category", type=click.Choice(CATEGORIES), default=None)
@click.option("--confidence", type=click.FloatRange(0.0, 1.0), default=None)
@_common
def update_cmd(ctx: click.Context, /, memory_id: str, content: str | None,
               category: str | None, confidence: float | None, actor: str | None,
               embedder_name: str | None, store: str | None, layer_dir: Path | None, as_json: bool,
               **paths: Path | None) -> None:
    """Write a new version of a memory (it keeps its context and relationships)."""
    updates = {k: v for k, v in (("content", content), ("category", category),
                                 ("confidence", confidence)) if v is not None}
    with _service(ctx, store, layer_dir, embedder_name, paths) as svc:
        out = svc.update(actor or own_actor(), memory_id, updates, human=True)
    if as_json:
        emit_json(out)
    else:
        click.echo(f"updated: {out['id']} supersedes {out['superseded_id']}")


@memory.command(name="forget")
@click.argument("memory_id")
@_common
def forget_cmd(ctx: click.Context, /, memory_id: str, actor: str | None,
               embedder_name: str | None, store: str | None, layer_dir: Path | None, as_json: bool,
               **paths: Path | None) -> None:
    """Forget a memory: gone from recall, lists and search at once (purge removes the
    text from disk)."""
    with _service(ctx, store, layer_dir, embedder_name, paths) as svc:
        out = svc.delete(actor or own_actor(), memory_id, human=True)
    if as_json:
        emit_json(out)
    else:
        click.echo(f"forgot {out['id']}")


@memory.command(name="forget-all")
@click.option("--yes", "confirm", is_flag=True, help="Confirm: forget every memory of yours.")
@click.option("--scope", type=click.Choice(["user", "project"]), default=None,
              help="Only this scope (default both).")
@click.option("--purge", is_flag=True, help="Then remove the forgotten text from disk.")
@_common
def forget_all_cmd(ctx: click.Context, /, confirm: bool, scope: str | None, purge: bool,
                   actor: str | None, embedder_name: str | None, store: str | None,
                   layer_dir: Path | None, as_json: bool, **paths: Path | None) -> None:
    """Forget all your memories (user and project scope here); needs --yes."""
    with _service(ctx, store, layer_dir, embedder_name, paths) as svc:
        out = svc.forget_all(actor or own_actor(), confirm, scope, human=True,
                             purge=purge)
    if as_json:
        emit_json(out)
    else:
        click.echo(f"forgot {out['forgotten']} memories"
                   + (f"; purged {out['purged']} chunks" if purge else ""))


@memory.command(name="contexts")
@click.argument("name", required=False)
@click.option("--description", default=None, help="Set the context's description.")
@click.option("--priority", type=click.FloatRange(0.0, 1.0), default=None,
              help="Set its priority (higher first).")
@click.option("--scope", type=click.Choice(["user", "project"]), default="user",
              show_default=True, help="Which store's context NAME is.")
@_common
def contexts_cmd(ctx: click.Context, /, name: str | None, description: str | None,
                 priority: float | None, scope: str, actor: str | None,
                 embedder_name: str | None, store: str | None, layer_dir: Path | None,
                 as_json: bool,
                 **paths: Path | None) -> None:
    """List your memory contexts; with NAME and options, describe or re-prioritise one."""
    who = actor or own_actor()
    with _service(ctx, store, layer_dir, embedder_name, paths) as svc:
        if name is not None:
            svc.set_context(who, name, scope, description, priority)
        out = svc.contexts(who)
    if as_json:
        emit_json(out)
        return
    if not out["contexts"]:
        click.echo("no memory contexts")
    for c in out["contexts"]:
        click.echo(f"{safe(c['name'])} ({c['scope']}, priority {c['priority']:.2f}, "
                   f"{c['memories']} memories) {safe(c['description'])}".rstrip())


@memory.command(name="purge")
@_common
def purge_cmd(ctx: click.Context, /, actor: str | None, embedder_name: str | None,
              store: str | None, layer_dir: Path | None,
              as_json: bool, **paths: Path | None) -> None:
    """Remove your forgotten memories' text (and the versions they replaced) from disk,
    by rewriting the layers that hold them."""
    with _service(ctx, store, layer_dir, embedder_name, paths) as svc:
        out = svc.purge(actor or own_actor())
    if as_json:
        emit_json(out)
    else:
        click.echo(f"purged {out['purged']} chunks")

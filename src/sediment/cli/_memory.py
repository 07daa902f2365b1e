"""``sediment memory ...``: a person's view of what agents remember (docs/memory.md).

Commands act as ``--actor`` (or ``SEDIMENT_ACTOR``, else the OS user) and as a human: a
global save writes the global memory directly, and global memories can be changed. Memory
text is untrusted: it is printed literally, with control characters escaped. With
``--store URL`` the same commands work on a PostgreSQL store's memories (cli/_team.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from sediment.cli._app import cli
from sediment.cli._options import (
    embedder_option,
    json_option,
    store_layer_options,
)
from sediment.cli._output import visible
from sediment.cli._workspace import Answer, service_command
from sediment.memory import CATEGORIES, MAX_LIMIT, MemoryService

SCOPES = ("user", "project", "global")


safe = functools.partial(visible, keep_lines=True)
"""Untrusted text for a terminal: control and bidirectional characters escaped; newlines
and tabs kept."""


actor_option = click.option(
    "--actor", default=None, envvar="SEDIMENT_ACTOR",
    help="Act as this actor (default: the OS user; env SEDIMENT_ACTOR). A convenience on one "
         "machine, not a security boundary.")


def _options(f: Callable[..., None]) -> Callable[..., None]:
    for deco in (click.pass_context, json_option, store_layer_options, embedder_option,
                 actor_option):
        f = deco(f)
    return f


_command = functools.partial(service_command, lambda ws, _: ws.memory, _options)
"""A memory command over the memories of the layer files, or with ``--store`` of a
PostgreSQL store's project and the actor's own memories (which follow them across
projects)."""


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


def _saved(out: Answer) -> None:
    if out["status"] == "updated":
        kind = "correction" if out["looks_like_correction"] else "restatement"
        click.echo(f"updated: {out['id']} supersedes {out['superseded_id']} (similarity "
                   f"{out['similarity']:.2f}, looks like a {kind}"
                   + (f": {', '.join(out['correction_signals'])} differ" if
                      out["correction_signals"] else "") + ")")
    else:
        click.echo(f"{out['status']}: {out['id']} ({out['category']}, {out['scope']})")


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
@_command(_saved)
def save_cmd(svc: MemoryService, actor: str, /, content: str, category: str, source: str,
             scope: str, context_name: str | None, related: tuple[str, ...]) -> Answer:
    """Save a memory (a near-duplicate of one of yours in the scope is superseded)."""
    return svc.save(actor, content, category, source, scope, context_name,
                    list(related) or None, human=True)


def _recalled(out: Answer) -> None:
    if not out["memories"]:
        click.echo(f"no memory is relevant enough (none scores {out['min_score']} or more)")
    for i, m in enumerate(out["memories"], 1):
        _show_memory(m, i)


@memory.command(name="recall")
@click.argument("query")
@click.option("--category", type=click.Choice(CATEGORIES), default=None)
@click.option("--scope", type=click.Choice(SCOPES), default=None)
@click.option("--limit", type=click.IntRange(1, MAX_LIMIT), default=10, show_default=True)
@click.option("--min-score", type=click.FloatRange(0.0, 1.0), default=None,
              help="Leave out memories scoring under this (default: the embedder's floor, "
                   "0.2 with MiniLM; 0 shows every match).")
@_command(_recalled)
def recall_cmd(svc: MemoryService, actor: str, /, query: str, category: str | None,
               scope: str | None, limit: int, min_score: float | None) -> Answer:
    """Find your memories relevant to QUERY (counts a use of each one shown)."""
    return svc.recall(actor, query, category, scope, limit, min_score)


def _listed(out: Answer) -> None:
    click.echo(f"{out['total']} memories" + (f" (showing {len(out['memories'])})"
                                             if out["total"] > len(out["memories"]) else ""))
    for m in out["memories"]:
        _show_memory(m)


@memory.command(name="list")
@click.option("--category", type=click.Choice(CATEGORIES), default=None)
@click.option("--scope", type=click.Choice(SCOPES), default=None)
@click.option("--limit", type=click.IntRange(1, 10_000), default=20, show_default=True)
@_command(_listed)
def list_cmd(svc: MemoryService, actor: str, /, category: str | None, scope: str | None,
             limit: int) -> Answer:
    """List your active memories, most used first, then newest."""
    return svc.list_memories(actor, category, limit, scope)


def _shown(out: Answer) -> None:
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


@memory.command(name="show")
@click.argument("memory_id")
@_command(_shown)
def show_cmd(svc: MemoryService, actor: str, /, memory_id: str) -> Answer:
    """Show a memory, its versions (the supersession chain), context, relationships and
    use history."""
    return svc.show(actor, memory_id)


@memory.command(name="update")
@click.argument("memory_id")
@click.option("--content", default=None, help="New text.")
@click.option("--category", type=click.Choice(CATEGORIES), default=None)
@click.option("--confidence", type=click.FloatRange(0.0, 1.0), default=None)
@_command(lambda out: click.echo(f"updated: {out['id']} supersedes {out['superseded_id']}"))
def update_cmd(svc: MemoryService, actor: str, /, memory_id: str, content: str | None,
               category: str | None, confidence: float | None) -> Answer:
    """Write a new version of a memory (it keeps its context and relationships)."""
    updates = {k: v for k, v in (("content", content), ("category", category),
                                 ("confidence", confidence)) if v is not None}
    return svc.update(actor, memory_id, updates, human=True)


@memory.command(name="forget")
@click.argument("memory_id")
@_command(lambda out: click.echo(f"forgot {out['id']}"))
def forget_cmd(svc: MemoryService, actor: str, /, memory_id: str) -> Answer:
    """Forget a memory: gone from recall, lists and search at once (purge removes the
    text from disk)."""
    return svc.delete(actor, memory_id, human=True)


@memory.command(name="forget-all")
@click.option("--yes", "confirm", is_flag=True, help="Confirm: forget every memory of yours.")
@click.option("--scope", type=click.Choice(["user", "project"]), default=None,
              help="Only this scope (default both).")
@click.option("--purge", is_flag=True, help="Then remove the forgotten text from disk.")
@_command(lambda out: click.echo(f"forgot {out['forgotten']} memories"
                                 + (f"; purged {out['purged']} chunks" if "purged" in out
                                    else "")))
def forget_all_cmd(svc: MemoryService, actor: str, /, confirm: bool, scope: str | None,
                   purge: bool) -> Answer:
    """Forget all your memories (user and project scope here); needs --yes."""
    return svc.forget_all(actor, confirm, scope, human=True, purge=purge)


def _contexts(out: Answer) -> None:
    if not out["contexts"]:
        click.echo("no memory contexts")
    for c in out["contexts"]:
        click.echo(f"{safe(c['name'])} ({c['scope']}, priority {c['priority']:.2f}, "
                   f"{c['memories']} memories) {safe(c['description'])}".rstrip())


@memory.command(name="contexts")
@click.argument("name", required=False)
@click.option("--description", default=None, help="Set the context's description.")
@click.option("--priority", type=click.FloatRange(0.0, 1.0), default=None,
              help="Set its priority (higher first).")
@click.option("--scope", type=click.Choice(["user", "project"]), default="user",
              show_default=True, help="Which store's context NAME is.")
@_command(_contexts)
def contexts_cmd(svc: MemoryService, actor: str, /, name: str | None,
                 description: str | None, priority: float | None, scope: str) -> Answer:
    """List your memory contexts; with NAME and options, describe or re-prioritise one."""
    if name is not None:
        svc.set_context(actor, name, scope, description, priority)
    return svc.contexts(actor)


@memory.command(name="purge")
@_command(lambda out: click.echo(f"purged {out['purged']} chunks"))
def purge_cmd(svc: MemoryService, actor: str, /) -> Answer:
    """Remove your forgotten memories' text (and the versions they replaced) from disk,
    by rewriting the layers that hold them."""
    return svc.purge(actor)

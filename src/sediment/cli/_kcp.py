"""``sediment kcp``: validate, start and query knowledge.yaml manifests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from sediment.cli._app import cli
from sediment.cli._options import get_config, json_option
from sediment.cli._output import emit_json, note, visible
from sediment.errors import NotFoundError, ValidationError
from sediment.kcp import (
    RemotePolicy,
    ValidationResult,
    find_manifests,
    load_catalog,
    query_units,
    resolve_federation,
    validate_file,
    write_starter,
)
from sediment.kcp.query import DEFAULT_LIMIT
from sediment.kcp.validate import SCOPES


@cli.group()
def kcp() -> None:
    """Knowledge Context Protocol manifests (knowledge.yaml)."""


def _root(ctx: click.Context, given: Path | None) -> Path:
    return given if given is not None else get_config(ctx).root


@kcp.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--remote", is_flag=True,
              help="Also fetch and validate federated manifests (HTTPS, public addresses "
                   "only, depth 5).")
@json_option
@click.pass_context
def validate(ctx: click.Context, /, path: Path | None, remote: bool, as_json: bool) -> None:
    """Validate a manifest, or every manifest under a directory; exit 1 if any is invalid.

    PATH defaults to the project root: its knowledge.yaml (or the one llms.txt declares)
    and every knowledge.yaml in its subdirectories.
    """
    target = _root(ctx, path)
    if target.is_dir():
        discovery = find_manifests(target)
        files = [target / m.path for m in discovery.manifests]
        notes = discovery.warnings
        if not files:
            raise NotFoundError(f"no knowledge.yaml under {target} (nor one declared in "
                                "llms.txt); `sediment kcp init` writes a starter")
    elif target.exists():
        files, notes = [target], []
    else:
        raise NotFoundError(f"{target}: no such file or directory")
    results = [validate_file(f) for f in files]
    remote_reports = [_federate(r) for r in results] if remote else []
    if as_json:
        emit_json({"valid": all(r.valid for r in results), "notes": notes,
                   "manifests": [r.to_dict() for r in results],
                   "remote": remote_reports if remote else None})
    else:
        for remark in notes:
            click.echo(f"note: {visible(remark)}")
        for r in results:
            _print_result(r)
        for report in remote_reports:
            _print_remote(report)
    if not all(r.valid for r in results):
        ctx.exit(1)


def _print_result(r: ValidationResult, *, err: bool = False) -> None:
    state = "valid" if r.valid else "INVALID"
    counts = ("could not be parsed" if r.parse_error else
              f"{r.unit_count} units, {r.relationship_count} relationships")
    click.echo(f"{visible(r.source)}: {state} ({counts}; {len(r.errors)} errors, "
               f"{len(r.warnings)} warnings)", err=err)
    for issue in r.errors:
        click.echo(f"  error   {visible(str(issue))}", err=err)
    for issue in r.warnings:
        click.echo(f"  warning {visible(str(issue))}", err=err)
    if r.manifest and r.manifest.ignored_edges:
        edges = ", ".join(f"{a} -> {b}" for a, b in r.manifest.ignored_edges)
        click.echo(f"  note    depends_on cycles broken by ignoring: {visible(edges)} (KCP 4.7)",
                   err=err)


def _federate(r: ValidationResult) -> dict[str, Any]:
    if r.manifest is None:
        return {"source": r.source, "manifests": [], "refused": [], "warnings": []}
    fed = resolve_federation(r.manifest, RemotePolicy(enabled=True),
                             base_dir=Path(r.source).parent)
    return {
        "source": r.source,
        "manifests": [{"id": m.id, "url": m.url, "depth": m.depth, **m.result.to_dict()}
                      for m in fed.manifests],
        "refused": [{"url": e.url, "rule": e.rule, "message": e.detail} for e in fed.refused],
        "warnings": fed.warnings,
    }


def _print_remote(report: dict[str, Any]) -> None:
    for m in report["manifests"]:
        state = "valid" if m["valid"] else "INVALID"
        click.echo(visible(f"  remote {m['id']} {m['url']}: {state} ({m['unit_count']} units)"))
    for e in report["refused"]:
        click.echo(visible(f"  remote {e['url']}: refused [{e['rule']}] {e['message']}"))
    for w in report["warnings"]:
        click.echo(f"  remote note: {visible(w)}")


@kcp.command()
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Repository root (default: the project root).")
@click.option("--project", default=None, help="Project name (default: the directory name).")
@click.option("--force", is_flag=True, help="Overwrite an existing knowledge.yaml.")
@json_option
@click.pass_context
def init(ctx: click.Context, /, root: Path | None, project: str | None, force: bool,
         as_json: bool) -> None:
    """Write a starter knowledge.yaml listing the repository's Markdown files.

    Intents are left empty for a person to write (a tool cannot know which question a
    file answers); the file says where. An existing knowledge.yaml is kept unless --force.
    """
    base = _root(ctx, root)
    target = write_starter(base, force=force, project=project)
    units = validate_file(target).unit_count
    if as_json:
        emit_json({"path": str(target), "units": units})
        return
    click.echo(f"wrote {visible(str(target))} with {units} units; write each empty intent (one "
               "sentence: the question the file answers), then run `sediment kcp validate`.")


@kcp.command()
@click.argument("terms", nargs=-1, required=True)
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Project root whose manifests are queried (default: the project root).")
@click.option("-k", "limit", type=click.IntRange(1, 1000), default=DEFAULT_LIMIT,
              show_default=True, help="Number of units.")
@click.option("--audience", default=None, help="Only units for this audience.")
@click.option("--scope", type=click.Choice(SCOPES), default=None, help="Only this scope.")
@click.option("--include-deprecated", is_flag=True, help="Also return deprecated units.")
@json_option
@click.pass_context
def query(ctx: click.Context, /, terms: tuple[str, ...], root: Path | None, limit: int,
          audience: str | None, scope: str | None, include_deprecated: bool,
          as_json: bool) -> None:
    """Rank units by TERMS: 5 per trigger match, 3 per intent match, 1 per id/path match.

    Each argument is one term (quote a phrase: "expense report"). Units are read from the
    manifests, not from the layer files.
    """
    catalog = load_catalog(_root(ctx, root))
    matches = query_units(catalog.entries, terms, audience=audience, scope=scope,
                          exclude_deprecated=not include_deprecated, limit=limit)
    skipped = [r.source for r in catalog.invalid]
    only_invalid = bool(catalog.invalid) and not catalog.entries
    if as_json:
        emit_json({"terms": list(terms), "results": [m.to_dict() for m in matches],
                   "invalid_manifests": skipped,
                   "errors": {r.source: [str(e) for e in r.errors] for r in catalog.invalid}})
        if only_invalid:
            ctx.exit(1)
        return
    if only_invalid:
        for r in catalog.invalid:
            _print_result(r, err=True)
        raise ValidationError("every knowledge.yaml found is invalid, so nothing was queried; "
                              "fix the errors above (sediment kcp validate)")
    for path in skipped:
        note(f"note: {path} is invalid and was not queried (sediment kcp validate)")
    if not catalog.entries:
        click.echo("No valid knowledge.yaml found.")
        return
    if not matches:
        click.echo("No unit matches.")
        return
    for n, m in enumerate(matches, 1):
        d = m.to_dict()
        click.echo(visible(f"{n}. {d['unit_id']}  score {d['score']} "
                           f"({', '.join(d['match_reason'])})  {d['path']}"))
        if d["intent"]:
            click.echo(f"   {visible(d['intent'])}")

"""Review commands (RFC 15.4 to 15.6): diff, proposals, promote, compact, keygen, sign,
verify, export, import. Each is a thin adapter over ``sediment.review``.

Also ``show_chunk`` (the ``inspect --id`` view with provenance and events) and
``signature_option`` (``--require-signature PUBKEY`` for commands that read the base).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sediment.cli._app import (
    F,
    cli,
    emit_json,
    get_config,
    json_option,
    layer_options,
    open_layerset,
)
from sediment.cli._ids import CHUNK_ID, parse_id_list
from sediment.errors import ValidationError
from sediment.review import (
    DEFAULT_THRESHOLD,
    ChunkReport,
    Outcome,
    ResolvedSource,
    accept,
    compact,
    diff_layers,
    export_lines,
    get_proposal,
    import_file,
    inspect_chunk,
    keygen,
    list_proposals,
    promotable,
    promote,
    reject,
    require_signature,
    sign,
    verify,
)
from sediment.review._common import layer_name_for_file
from sediment.store import LayerName, LayerSet
from sediment.store.atomic import atomic_write

_WRITABLE = [n.value for n in (LayerName.USER, LayerName.DELTA, LayerName.LOCAL)]


def _console() -> Console:
    width = None if sys.stdout.isatty() else 160
    return Console(soft_wrap=True, highlight=False, width=width)


def _snip(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return escape(flat if len(flat) <= width else flat[: width - 1] + "…")


def _when(ms: int) -> str:
    """A chunk or event time for people: UTC to the second (0 means unknown)."""
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _ids(value: str) -> list[int]:
    try:
        return parse_id_list(value, what="--ids")
    except ValidationError as exc:
        raise click.BadParameter(str(exc), param_hint="--ids") from None


def _without_local(ls: LayerSet) -> LayerSet:
    paths: dict[LayerName, Path | None] = {n: p for n, p in ls.paths.items()
                                          if n is not LayerName.LOCAL}
    return LayerSet(paths)


def _echo_outcomes(outcomes: Sequence[Outcome], as_json: bool) -> None:
    if as_json:
        emit_json([o.to_dict() for o in outcomes])
    else:
        for o in outcomes:
            click.echo(o.message)


# -- diff ------------------------------------------------------------------------------------
@cli.command()
@click.option("--threshold", type=click.FloatRange(0.0, 1.0, min_open=True),
              default=DEFAULT_THRESHOLD, show_default=True,
              help="Cosine similarity at or above which different content is a near-duplicate "
                   "conflict.")
@layer_options
@json_option
@click.pass_context
def diff(ctx: click.Context, /, threshold: float, as_json: bool, layer_dir: Path | None,
         **paths: Path | None) -> None:
    """What the delta layer adds, which ids it overrides, what conflicts with base or user,
    and which proposals are pending (RFC 12, 15.5). The local layer is not compared."""
    ls = _without_local(open_layerset(get_config(ctx), layer_dir, **paths))
    report = diff_layers(ls, threshold)
    if as_json:
        emit_json(report.to_dict())
        return
    d = report.to_dict()
    con = _console()
    s, lay = d["summary"], d["layers"]
    con.print(f"delta {lay.get('delta')}: {s['delta_chunks']} chunk(s), {s['events']} event(s); "
              f"base {lay.get('base') or '(absent)'}, user {lay.get('user') or '(absent)'}")
    con.print(f"added {s['added']}, overrides {s['overrides']}, accepted {s['accepted']}, "
              f"conflicts {s['conflicts']}, duplicates {s['duplicates']}, pending proposals "
              f"{s['pending_proposals']}")
    for title, rows in (("Added", report.with_status("new")),
                        ("Overrides base", report.with_status("overrides-base",
                                                              "same-as-base"))):
        if rows:
            t = Table("id", "kind", "conf", "proposal", "content", title=f"{title} ({len(rows)})",
                      title_justify="left")
            for r in rows:
                note = " (same as base)" if r.status == "same-as-base" else ""
                t.add_row(str(r.chunk.id), r.chunk.kind, f"{r.chunk.confidence:.2f}",
                          r.proposal or "-", _snip(r.chunk.content) + note)
            con.print(t)
    for title, matches in (("Conflicts", report.conflicts), ("Duplicates", report.duplicates)):
        if matches:
            t = Table("type", "delta", "vs", "similarity", "delta content", "other content",
                      title=f"{title} ({len(matches)})", title_justify="left")
            for m in matches:
                sim = "-" if m.similarity is None else f"{m.similarity:.3f}"
                t.add_row(m.type, str(m.delta.id), f"{m.layer.value}:{m.other.id}", sim,
                          _snip(m.delta.content, 50), _snip(m.other.content, 50))
            con.print(t)
    if report.pending:
        t = Table("proposal", "chunk", "kind", "conf", "content",
                  title=f"Pending proposals ({len(report.pending)})", title_justify="left")
        for p in report.pending:
            c = p.chunk
            t.add_row(str(p.proposal_id), str(p.context_id), c.kind if c else "?",
                      f"{c.confidence:.2f}" if c else "-", _snip(c.content) if c else "(missing)")
        con.print(t)
        con.print("accept with `sediment proposals accept ID`, reject with `sediment proposals "
                  "reject ID --reason ...`")


# -- inspect --id (wired into `inspect` by cli/_read.py) --------------------------------------
def _print_source(con: Console, s: ResolvedSource, indent: int) -> None:
    pad = "  " * indent
    note = f"  [{escape(s.note)}]" if s.note else ""
    if s.type == "chunk" and s.chunk is not None:
        con.print(f"{pad}- chunk {s.ref} ({escape(str(s.layer))}, {escape(s.chunk.kind)}, "
                  f"{s.chunk.author}): {_snip(s.chunk.content)}{note}")
        for sub in s.sources:
            _print_source(con, sub, indent + 1)
    elif s.type == "file" and s.found:
        con.print(f"{pad}- {escape(str(s.ref))}: {escape(s.text or '')}")
    else:
        con.print(f"{pad}- {escape(str(s.ref))}{note}")


def print_chunk_report(report: ChunkReport, console: Console | None = None) -> None:
    con = console or _console()
    c = report.chunk
    where = report.layer or "not part of the layer set"
    con.print(f"chunk {c.id} in {escape(report.path)} ({where})")
    for key, value in (("kind", c.kind), ("author", c.author),
                       ("confidence", f"{c.confidence:.6g}"),
                       ("created", _when(c.created_at_ms))):
        con.print(f"  {key}: {escape(str(value))}")
    if report.versions:
        con.print("  versions: " + ", ".join(
            f"{n}{'' if v.content == c.content else ' (different content)'}"
            for n, v in report.versions))
    for pid, status in report.proposals:
        con.print(f"  proposal {pid}: {status}")
    con.print("  content:")
    for line in c.content.splitlines():
        con.print("    " + line, markup=False)
    con.print("  sources:" + ("" if report.sources else " (none)"))
    for s in report.sources:
        _print_source(con, s, 2)
    con.print("  events:" + ("" if report.events else " (none)"))
    for e in report.events:
        reason = e.data.get("reason")
        detail = f" ({escape(str(reason))})" if reason else ""
        verb = escape(str(e.data.get("event", "")))
        con.print(f"    - {_when(e.created_at_ms)} {e.layer}:{e.id} {escape(e.kind)} {verb} by "
                  f"{e.author}{detail}")


def show_chunk(path: Path, chunk_id: int, *, root: Path | None = None, as_json: bool = False,
               layerset: LayerSet | None = None) -> None:
    """``inspect PATH --id N``: the chunk, its resolved provenance and its events."""
    report = inspect_chunk(path, chunk_id, layerset=layerset, root=root)
    if as_json:
        emit_json(report.to_dict())
    else:
        print_chunk_report(report)


# -- proposals -------------------------------------------------------------------------------
@cli.group()
def proposals() -> None:
    """Review what agents proposed for promotion to the user layer (RFC 11.2, 15.5)."""


@proposals.command(name="list")
@click.option("--status", type=click.Choice(["all", "pending", "accepted", "rejected"]),
              default="all", show_default=True)
@layer_options
@json_option
@click.pass_context
def proposals_list(ctx: click.Context, /, status: str, as_json: bool, layer_dir: Path | None,
                   **paths: Path | None) -> None:
    """List proposals and their status (the fold of their events)."""
    ls = open_layerset(get_config(ctx), layer_dir, **paths)
    views = list_proposals(ls, None if status == "all" else status)
    if as_json:
        emit_json([v.to_dict() for v in views])
        return
    if not views:
        click.echo("no proposals" + ("" if status == "all" else f" with status {status}"))
        return
    t = Table("proposal", "status", "chunk", "kind", "conf", "content")
    for v in views:
        c = v.chunk
        t.add_row(str(v.proposal_id), v.status, str(v.context_id), c.kind if c else "?",
                  f"{c.confidence:.2f}" if c else "-", _snip(c.content) if c else "(missing)")
    _console().print(t)


@proposals.command(name="show")
@click.argument("proposal_id", type=CHUNK_ID)
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Directory path:line sources are read from (default: the current one).")
@layer_options
@json_option
@click.pass_context
def proposals_show(ctx: click.Context, /, proposal_id: int, root: Path | None, as_json: bool,
                   layer_dir: Path | None, **paths: Path | None) -> None:
    """One proposal: its status, decisions, the chunk with its provenance and events."""
    ls = open_layerset(get_config(ctx), layer_dir, **paths)
    view = get_proposal(ls, proposal_id)
    holder = next((la for n in (LayerName.DELTA, LayerName.LOCAL)
                   if (la := ls.layer(n)) is not None and la.file.get(view.context_id)
                   is not None), None)
    report = (inspect_chunk(holder.path, view.context_id, layerset=ls, root=root)
              if holder is not None else None)
    if as_json:
        emit_json({**view.to_dict(), "inspection": report.to_dict() if report else None})
        return
    con = _console()
    con.print(f"proposal {view.proposal_id}: {view.status}, chunk {view.context_id} from "
              f"{view.from_layer}, proposed {_when(view.proposed_at_ms)}")
    for d in view.decisions:
        con.print(f"  decision {d.id}: {d.verdict} by {d.author}, {_when(d.created_at_ms)}"
                  + (f" ({escape(d.reason)})" if d.reason else ""))
    if report is not None:
        print_chunk_report(report, con)
    else:
        con.print(f"chunk {view.context_id} is no longer in delta or local")


@proposals.command(name="accept")
@click.argument("proposal_ids", nargs=-1, required=True, type=CHUNK_ID)
@click.option("--reason", default="", help="Why (optional; kept in the decision event).")
@layer_options
@json_option
@click.pass_context
def proposals_accept(ctx: click.Context, /, proposal_ids: tuple[int, ...], reason: str,
                     as_json: bool, layer_dir: Path | None, **paths: Path | None) -> None:
    """Accept proposals: copy each chunk into the user layer (same id, author human) and
    record the decision in the delta layer. Accepting twice changes nothing."""
    ls = open_layerset(get_config(ctx), layer_dir, **paths)
    _echo_outcomes(accept(ls, proposal_ids, reason), as_json)


@proposals.command(name="reject")
@click.argument("proposal_ids", nargs=-1, required=True, type=CHUNK_ID)
@click.option("--reason", required=True, help="Why the proposal is rejected (required).")
@layer_options
@json_option
@click.pass_context
def proposals_reject(ctx: click.Context, /, proposal_ids: tuple[int, ...], reason: str,
                     as_json: bool, layer_dir: Path | None, **paths: Path | None) -> None:
    """Reject proposals with a reason; the decision is an event, nothing is deleted."""
    ls = open_layerset(get_config(ctx), layer_dir, **paths)
    _echo_outcomes(reject(ls, proposal_ids, reason), as_json)


# -- promote ---------------------------------------------------------------------------------
@cli.command(name="promote")
@click.option("--from", "from_path", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="Layer to copy from: the delta layer (default DIR/"
                                 "AGENTS.delta.db), or a local layer named AGENTS.local.db.")
@click.option("--to", "to_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="The user layer to copy into (default DIR/AGENTS.user.db).")
@click.option("--ids", "ids_csv", required=True, help="Comma-separated chunk ids, e.g. 12,15.")
@click.option("--reason", default="", help="Why (kept in the decision events).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (for scripts).")
@click.option("--dir", "layer_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Directory of the other layers (default: the directory of "
                                 "--from, else the project's).")
@json_option
@click.pass_context
def promote_cmd(ctx: click.Context, /, from_path: Path | None, to_path: Path | None,
                ids_csv: str, reason: str, yes: bool, layer_dir: Path | None,
                as_json: bool) -> None:
    """Copy chunks into the user layer without a proposal (RFC 15.5); each copy keeps its
    id, becomes author human, and is recorded as a decision in the delta layer."""
    ids = _ids(ids_csv)
    directory = layer_dir or (from_path.parent if from_path else None)
    source = LayerName.LOCAL if from_path is not None and \
        layer_name_for_file(from_path.name) is LayerName.LOCAL else LayerName.DELTA
    ls = open_layerset(get_config(ctx), directory,
                       **{f"{source.value}_path": from_path, "user_path": to_path})
    chunks = promotable(ls, ids, source)
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError("promote writes to the user layer and asks for confirmation"
                                   "; stdin is not a terminal, so pass --yes to proceed")
        for c in chunks:
            click.echo(f"  {c.id} [{c.kind}] {' '.join(c.content.split())[:100]}", err=True)
        click.confirm(f"Promote {len(chunks)} chunk(s) into {ls.paths[LayerName.USER]}?",
                      abort=True, err=True)
    _echo_outcomes(promote(ls, ids, source=source, reason=reason), as_json)


# -- compact ---------------------------------------------------------------------------------
@cli.command(name="compact")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="The new base layer to write (never one of the inputs).")
@click.option("--keep-events", is_flag=True,
              help="Keep meta.* event chunks (and the chunks they supersede or forget).")
@click.option("--rotate", is_flag=True,
              help="Then archive user and delta to dated files and reset them to empty "
                   "layers that keep the profile and id high-water mark.")
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
@layer_options
@json_option
@click.pass_context
def compact_cmd(ctx: click.Context, /, out: Path, keep_events: bool, rotate: bool, force: bool,
                as_json: bool, layer_dir: Path | None, **paths: Path | None) -> None:
    """Merge base and user into a new immutable base (RFC 15.6): user wins by id, vectors
    are copied, the bytes are deterministic. Move it over AGENTS.db yourself."""
    ls = open_layerset(get_config(ctx), layer_dir, **paths)
    report = compact(ls.paths[LayerName.BASE], ls.paths[LayerName.USER], out,
                     keep_events=keep_events, force=force, rotate=rotate,
                     delta=ls.paths.get(LayerName.DELTA))
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(f"wrote {report.out}: {report.chunks} chunks ({report.from_base} from base, "
               f"{report.from_user} from user, {report.overridden} overridden), "
               f"{report.events_dropped} events dropped, {report.bytes} bytes, sha256 "
               f"{report.sha256[:16]}, id high-water {report.id_high_water}")
    if report.requantized:
        click.echo(f"warning: {report.requantized} int8 vectors were re-quantised to the "
                   "base's scale", err=True)
    for r in report.rotated:
        click.echo(f"archived {r.layer} ({r.chunks} chunks) to {r.archive}; reset it empty")
    if report.pending_archived:
        click.echo(f"note: {report.pending_archived} pending proposal(s) went to the delta "
                   "archive", err=True)


# -- signatures ------------------------------------------------------------------------------
@cli.command(name="keygen")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="Private key file (PEM, mode 0600); the public key goes to OUT.pub.")
@click.option("--force", is_flag=True, help="Replace existing key files.")
@json_option
def keygen_cmd(out: Path, force: bool, as_json: bool) -> None:
    """Create an Ed25519 key pair for signing layer files."""
    private, public, fp = keygen(out, force=force)
    if as_json:
        emit_json({"private_key": str(private), "public_key": str(public), "fingerprint": fp})
    else:
        click.echo(f"wrote {private} (private, keep it secret) and {public}; {fp}")


@cli.command(name="sign")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--key", "key_path", type=click.Path(path_type=Path, dir_okay=False),
              envvar="SEDIMENT_SIGNING_KEY", required=True,
              help="Ed25519 private key (or SEDIMENT_SIGNING_KEY).")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Signature file (default PATH.sig).")
@json_option
def sign_cmd(path: Path, key_path: Path, out: Path | None, as_json: bool) -> None:
    """Write a detached Ed25519 signature over a layer file's bytes (RFC 13, 15.1)."""
    sig, fp = sign(path, key_path, out)
    if as_json:
        emit_json({"path": str(path), "signature": str(sig), "fingerprint": fp})
    else:
        click.echo(f"signed {path}: {sig} ({fp})")


@cli.command(name="verify")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--sig", "sig_path", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="Signature file (default PATH.sig).")
@click.option("--pubkey", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="Ed25519 public key (PEM or ssh-ed25519).")
@json_option
def verify_cmd(path: Path, sig_path: Path | None, pubkey: Path, as_json: bool) -> None:
    """Check a layer file against its detached signature; exit 1 unless it verifies."""
    fp = verify(path, pubkey, sig_path)
    if as_json:
        emit_json({"path": str(path), "verified": True, "fingerprint": fp})
    else:
        click.echo(f"verified {path} ({fp})")


def signature_option(f: F) -> F:
    """Add ``--require-signature PUBKEY`` to a command that takes ``layer_options``: the
    base layer must carry a valid detached signature (``AGENTS.db.sig``) before it runs."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        pubkey = kwargs.pop("require_signature", None)
        if pubkey is not None:
            base = kwargs.get("base_path")
            if base is None:
                directory = kwargs.get("layer_dir") or get_config(
                    click.get_current_context()).layer_dir
                base = Path(directory) / LayerName.BASE.file_name
            require_signature(base, pubkey)
        return f(*args, **kwargs)

    option: Callable[[F], F] = click.option(
        "--require-signature", "require_signature", metavar="PUBKEY", default=None,
        type=click.Path(path_type=Path, dir_okay=False),
        help="Refuse to run unless the base layer's signature (AGENTS.db.sig) verifies "
             "with this Ed25519 public key.")
    return option(wrapper)  # type: ignore[arg-type]


# -- export / import -------------------------------------------------------------------------
@cli.command(name="export")
@click.argument("layer", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              required=True, help="JSON Lines file to write ('-' for stdout).")
@json_option
def export_cmd(layer: Path, out: Path, as_json: bool) -> None:
    """Write a layer as JSON Lines: a header line, then one chunk per line with its vector."""
    if str(out) == "-":
        if as_json:
            raise click.UsageError("--json reports on the export; it cannot share stdout "
                                   "with --out -")
        for line in export_lines(layer):
            click.echo(line)
        return
    lines = list(export_lines(layer))
    atomic_write(out, "".join(line + "\n" for line in lines).encode("utf-8"))
    if as_json:
        emit_json({"layer": str(layer), "out": str(out), "chunks": len(lines) - 1})
    else:
        click.echo(f"exported {len(lines) - 1} chunks from {layer} to {out}")


@cli.command(name="import")
@click.argument("source", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--into", "into", required=True,
              help="Layer to append to: user, delta or local (in --dir), or a layer file.")
@click.option("--scope", type=click.Choice(_WRITABLE), default=None,
              help="Which layer --into FILE is, when its name is not a standard one.")
@click.option("--dir", "layer_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Directory of the layer set (default: --into's directory, "
                                 "else the project's).")
@click.option("--fresh-ids", is_flag=True,
              help="Give every chunk a new id (for layers whose ids another tool chose).")
@json_option
@click.pass_context
def import_cmd(ctx: click.Context, /, source: Path, into: str, scope: str | None,
               layer_dir: Path | None, fresh_ids: bool, as_json: bool) -> None:
    """Append the chunks of a JSON Lines export to a layer, ids and vectors unchanged.

    Every line is checked first; the first bad one is reported by number and nothing is
    written. Base is never written; importing into user is a human decision, like this one.
    """
    cfg = get_config(ctx)
    if into.lower() in {n.value for n in LayerName}:
        target = LayerName.parse(into)
        ls = open_layerset(cfg, layer_dir)
    else:
        path = Path(into)
        named = LayerName.parse(scope) if scope else layer_name_for_file(path.name)
        if named is None:
            raise click.UsageError(f"{path.name} is not a standard layer file name; say which "
                                   "layer it is with --scope user|delta|local")
        target = named
        ls = open_layerset(cfg, layer_dir or path.parent, **{f"{target.value}_path": path})
    if target is LayerName.BASE:
        raise ValidationError("cannot import into the base layer: AGENTS.db is immutable "
                              "(RFC 6.1); import into user, delta or local")
    report = import_file(ls, target, source, fresh_ids=fresh_ids)
    if as_json:
        emit_json(report.to_dict())
    else:
        extra = f" ({len(report.overrides)} override other layers)" if report.overrides else ""
        click.echo(f"imported {report.chunks} chunks into the {report.layer} layer "
                   f"({report.path}){extra}")

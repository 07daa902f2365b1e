"""``sediment keygen``, ``sign`` and ``verify``: detached Ed25519 signatures over layer
files (RFC 13, 15.1)."""

from __future__ import annotations

from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._options import json_option
from sediment.cli._output import emit_json, to_stdout, visible
from sediment.review import keygen, sign, verify


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
        click.echo(f"wrote {visible(str(private))} (private, keep it secret) and "
                   f"{visible(str(public))}; {fp}")


@cli.command(name="sign")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--key", "key_path", type=click.Path(path_type=Path, dir_okay=False),
              envvar="SEDIMENT_SIGNING_KEY", required=True,
              help="Ed25519 private key (or SEDIMENT_SIGNING_KEY).")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              default=None, help="Signature file (default PATH.sig; '-' for stdout).")
@json_option
def sign_cmd(path: Path, key_path: Path, out: Path | None, as_json: bool) -> None:
    """Write a detached Ed25519 signature over a layer file's bytes (RFC 13, 15.1)."""
    stdout = to_stdout(out, as_json, "signature")
    sig, fp = sign(path, key_path, out)
    if as_json:
        emit_json({"path": str(path), "signature": str(sig), "fingerprint": fp})
    else:
        click.echo(f"signed {visible(str(path))}: {visible(str(sig))} ({fp})", err=stdout)


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
        click.echo(f"verified {visible(str(path))} ({fp})")



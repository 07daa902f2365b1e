"""Ed25519 detached signatures: keys, signing, verification, and what fails."""

from __future__ import annotations

import stat
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from sediment.cli._options import layer_options, signature_option
from sediment.errors import FormatError, NotFoundError, PermissionDeniedError, ValidationError
from sediment.review import SignatureError, keygen, require_signature, sign, verify
from tests.review.helpers import make_base


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, Path, Path]:
    base = make_base(tmp_path)
    key, pub, _ = keygen(tmp_path / "keys" / "ci.key")
    sign(base, key)
    return base, key, pub


def test_keygen_writes_a_private_key_only_its_owner_reads(tmp_path: Path) -> None:
    key, pub, fp = keygen(tmp_path / "k")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert pub == tmp_path / "k.pub" and pub.read_bytes().startswith(b"-----BEGIN PUBLIC KEY")
    assert fp.startswith("SHA256:")
    with pytest.raises(ValidationError, match="already exists"):
        keygen(tmp_path / "k")
    _, _, fp2 = keygen(tmp_path / "k", force=True)
    assert fp2 != fp and stat.S_IMODE(key.stat().st_mode) == 0o600


def test_sign_and_verify(signed: tuple[Path, Path, Path]) -> None:
    base, _, pub = signed
    sig = base.with_name("AGENTS.db.sig")
    assert len(sig.read_bytes()) == 64
    assert verify(base, pub) == require_signature(base, pub)


def test_tampering_wrong_key_and_missing_signature_fail(signed: tuple[Path, Path, Path],
                                                        tmp_path: Path) -> None:
    base, _, pub = signed
    _, other_pub, _ = keygen(tmp_path / "other.key")
    with pytest.raises(SignatureError, match="does not verify"):
        verify(base, other_pub)
    data = bytearray(base.read_bytes())
    data[-1] ^= 1
    base.write_bytes(bytes(data))
    with pytest.raises(SignatureError, match="modified after signing"):
        require_signature(base, pub)
    base.with_name("AGENTS.db.sig").write_bytes(b"short")
    with pytest.raises(SignatureError, match="not an Ed25519 signature"):
        verify(base, pub)
    base.with_name("AGENTS.db.sig").unlink()
    with pytest.raises(PermissionDeniedError, match="no signature"):
        require_signature(base, pub)
    with pytest.raises(NotFoundError, match="no such public key"):
        verify(base, tmp_path / "nope.pub")
    with pytest.raises(ValidationError, match="not a PEM or OpenSSH public key"):
        verify(base, base)


def test_openssh_keys_are_accepted(tmp_path: Path) -> None:
    base = make_base(tmp_path)
    key = Ed25519PrivateKey.generate()
    (tmp_path / "id_ed25519").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption()))
    (tmp_path / "id_ed25519.pub").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH) + b" ci@host\n")
    sign(base, tmp_path / "id_ed25519", tmp_path / "detached.sig")
    verify(base, tmp_path / "id_ed25519.pub", tmp_path / "detached.sig")


def test_only_layer_files_are_signed(tmp_path: Path) -> None:
    key, _, _ = keygen(tmp_path / "k")
    (tmp_path / "notes.txt").write_text("not a layer")
    with pytest.raises(FormatError, match=r"magic|shorter"):
        sign(tmp_path / "notes.txt", key)


def test_signature_option_guards_a_command(signed: tuple[Path, Path, Path],
                                           tmp_path: Path) -> None:
    base, _, pub = signed
    ran: list[Path | None] = []

    @click.command()
    @signature_option
    @layer_options
    def probe(layer_dir: Path | None, **paths: Path | None) -> None:
        ran.append(layer_dir)

    runner = CliRunner()
    ok = runner.invoke(probe, ["--dir", str(tmp_path), "--require-signature", str(pub)])
    assert ok.exit_code == 0 and ran == [tmp_path]
    assert runner.invoke(probe, ["--dir", str(tmp_path)]).exit_code == 0
    base.write_bytes(base.read_bytes() + b"\0")
    bad = runner.invoke(probe, ["--base", str(base), "--require-signature", str(pub)])
    assert isinstance(bad.exception, SignatureError) and len(ran) == 2

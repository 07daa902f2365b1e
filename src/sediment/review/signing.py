"""Ed25519 detached signatures over a layer file's bytes (RFC 13, 15.1).

CI signs the base it compiles; a server or a search started with ``--require-signature``
refuses a base whose signature does not verify. Formats, chosen so that standard tools
interoperate:

- private key: PKCS#8 PEM, unencrypted, mode 0600 (OpenSSH ``ssh-keygen -t ed25519`` keys
  are read too);
- public key: SubjectPublicKeyInfo PEM (``ssh-ed25519 AAAA...`` lines are read too);
- signature: the raw 64 bytes, beside the file as ``<file>.sig``. ``openssl pkeyutl
  -verify -pubin -inkey KEY.pub -rawin -in AGENTS.db -sigfile AGENTS.db.sig`` checks it.

The signature covers the whole file (pure Ed25519, no pre-hash), read through a memory map.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from sediment.errors import NotFoundError, SignatureError, ValidationError
from sediment.format import LayerFile
from sediment.store.atomic import STDOUT, is_regular_target, write_output

SIGNATURE_BYTES = 64


def signature_path(path: Path) -> Path:
    return path.with_name(path.name + ".sig")


def fingerprint(key: Ed25519PublicKey) -> str:
    """``SHA256:`` + base64 of the raw public key's hash, like ``ssh-keygen -l``."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "SHA256:" + base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise NotFoundError(f"{path}: no such {what}") from exc
    except IsADirectoryError as exc:
        raise NotFoundError(f"{path}: is a directory, not a {what}") from exc
    except PermissionError as exc:
        raise NotFoundError(f"{path}: permission denied reading the {what}") from exc


def load_private_key(path: Path) -> Ed25519PrivateKey:
    data = _read(path, "private key")
    key: object
    try:
        if data.startswith(b"-----BEGIN OPENSSH PRIVATE KEY"):
            key = serialization.load_ssh_private_key(data, password=None)
        else:
            key = serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:
        raise ValidationError(f"{path}: the private key is encrypted; use an unencrypted "
                              "key (sediment keygen writes one, mode 0600)") from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ValidationError(f"{path}: not a PEM or OpenSSH private key") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise ValidationError(f"{path}: the key is {type(key).__name__}, not Ed25519")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    data = _read(path, "public key")
    key: object
    try:
        if data.lstrip().startswith(b"ssh-"):
            key = serialization.load_ssh_public_key(data.strip())
        else:
            key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ValidationError(f"{path}: not a PEM or OpenSSH public key") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise ValidationError(f"{path}: the key is {type(key).__name__}, not Ed25519")
    return key


def keygen(out: Path, *, force: bool = False) -> tuple[Path, Path, str]:
    """Write a new private key to ``out`` (mode 0600) and its public key to ``out.pub``.

    Returns both paths and the public key's fingerprint. Existing files are kept unless
    ``force``.
    """
    pub = out.with_name(out.name + ".pub")
    for p in (out, pub):
        if str(p) == STDOUT or not is_regular_target(p):
            raise ValidationError(f"{p} is not a regular file: a key pair is written to two "
                                  "files (OUT, mode 0600, and OUT.pub)")
        if p.exists() and not force:
            raise ValidationError(f"{p} already exists; pass --force to replace it")
        if p.is_dir():
            raise ValidationError(f"{p} is a directory")
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        if force:
            out.unlink(missing_ok=True)
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o600)
            fh.write(private)
        pub.write_bytes(public)
    except OSError as exc:
        raise ValidationError(f"{out}: cannot write the key: {exc.strerror or exc}") from exc
    return out, pub, fingerprint(key.public_key())


@contextlib.contextmanager
def _mapped(path: Path) -> Iterator[memoryview]:
    """The file's bytes through a read-only memory map (no copy of a large base)."""
    try:
        fh = path.open("rb")
    except FileNotFoundError as exc:
        raise NotFoundError(f"{path}: no such layer file") from exc
    except OSError as exc:
        raise NotFoundError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    with fh:
        if os.fstat(fh.fileno()).st_size == 0:
            yield memoryview(b"")
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm, memoryview(mm) as view:
            yield view


def sign(path: Path, key_path: Path, out: Path | None = None) -> tuple[Path, str]:
    """Sign the bytes of the layer file ``path``; return the signature path and key
    fingerprint."""
    key = load_private_key(key_path)
    LayerFile.open(path)  # only a well-formed layer file is worth signing
    with _mapped(path) as data:
        signature = key.sign(data)
    target = out or signature_path(path)
    write_output(target, signature)
    return target, fingerprint(key.public_key())


def verify(path: Path, pubkey_path: Path, sig_path: Path | None = None) -> str:
    """Check ``path`` against its detached signature; return the key's fingerprint.

    Raises ``SignatureError`` when the signature is missing, malformed, or does not match
    (the file changed after signing, or it was signed with another key).
    """
    key = load_public_key(pubkey_path)
    sig = sig_path or signature_path(path)
    if not path.exists():
        raise NotFoundError(f"{path}: no such layer file")
    if not sig.exists():
        raise SignatureError(f"{path}: no signature at {sig}; sign it with `sediment sign "
                             f"{path} --key KEY`")
    signature = sig.read_bytes()
    if len(signature) != SIGNATURE_BYTES:
        raise SignatureError(f"{sig}: not an Ed25519 signature ({len(signature)} bytes, "
                             f"expected {SIGNATURE_BYTES})")
    try:
        with _mapped(path) as data:
            key.verify(signature, data)
    except InvalidSignature as exc:
        raise SignatureError(
            f"{path}: the signature {sig} does not verify with {pubkey_path} "
            f"({fingerprint(key)}): the file was modified after signing, or was signed "
            "with a different key") from exc
    return fingerprint(key)


def require_signature(path: str | os.PathLike[str], pubkey_path: str | os.PathLike[str],
                      sig_path: str | os.PathLike[str] | None = None) -> str:
    """Refuse a layer whose detached signature does not verify (``--require-signature``).

    For ``serve`` and ``search``: raises ``SignatureError`` (a ``PermissionDeniedError``)
    with a message saying what failed; returns the signer's key fingerprint.
    """
    return verify(Path(path), Path(pubkey_path), Path(sig_path) if sig_path else None)

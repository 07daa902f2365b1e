"""Connectors: the trees a compile reads, from the local filesystem or a git repository.

Each configured source becomes a ``SourceRoot``: a directory on disk, the globs that select
its files, and the prefix its provenance paths carry. A git source is cloned once into a
cache directory and fetched again on every resolve, then checked out (detached) at the
commit its ref names; compile reads that checkout like any directory. Its chunks' sources
read ``prefix/path:line`` (RFC 7.2's ``file:line``), so two sources holding the same path
stay apart, and the layer metadata records each source's name, ref and commit.

Git runs as a subprocess (no shell) with a time limit per call, no terminal prompts and only
the https, ssh and file transports allowed (checked here, :func:`check_git_url`, and by git's
``protocol.allow``), so a source's URL or a repository's configuration cannot make a compile
hang or run a command; every failure is a ``ValidationError`` naming the source and the git message.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sediment.errors import NotFoundError, ValidationError

__all__ = ["GIT_TIMEOUT", "FilesystemSource", "GitSource", "SourceRoot", "check_git_url",
           "public_url", "resolve_sources"]

GIT_TIMEOUT = 300.0
"""Seconds one git command (a clone or fetch of a large repository) may take."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True, slots=True)
class SourceRoot:
    """One tree a compile reads: files under ``root`` that the globs select.

    ``prefix`` is prepended (``prefix/``) to every provenance path; the project tree itself
    has none. ``record`` is what the layer metadata says about the source (None: nothing).
    """

    root: Path
    include: Sequence[str]
    exclude: Sequence[str] = ()
    prefix: str = ""
    record: Mapping[str, Any] | None = None

    def shown(self, rel: str) -> str:
        return f"{self.prefix}/{rel}" if self.prefix else rel


@dataclass(frozen=True, slots=True)
class FilesystemSource:
    name: str
    root: Path
    include: Sequence[str]
    exclude: Sequence[str] = ()
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class GitSource:
    name: str
    url: str
    """A URL git understands, or a local path (absolute, or already resolved by the caller)."""
    include: Sequence[str]
    exclude: Sequence[str] = ()
    ref: str = "HEAD"
    prefix: str | None = None
    """Default: the source's name."""
    timeout: float = field(default=GIT_TIMEOUT)


def _check_names(sources: Sequence[FilesystemSource | GitSource]) -> None:
    names: set[str] = set()
    prefixes: dict[str, str] = {}
    for s in sources:
        if not _NAME.match(s.name):
            raise ValidationError(f"source name {s.name!r} must be 1-64 letters, digits, '.', "
                                  "'_' or '-', starting with a letter or digit")
        if s.name in names:
            raise ValidationError(f"two sources are named {s.name!r}; names must be unique")
        names.add(s.name)
        prefix = _prefix(s)
        if prefix and (prefix.startswith("/") or ".." in prefix.split("/") or ":" in prefix):
            raise ValidationError(f"source {s.name!r}: prefix {prefix!r} must be a relative "
                                  "path without '..' or ':'")
        if prefix in prefixes:
            shown = repr(prefix) if prefix else "no prefix"
            raise ValidationError(
                f"sources {prefixes[prefix]!r} and {s.name!r} both have {shown}, so their "
                "paths could collide; give one of them a distinct prefix")
        prefixes[prefix] = s.name


def _prefix(s: FilesystemSource | GitSource) -> str:
    if isinstance(s, GitSource):
        return (s.name if s.prefix is None else s.prefix).strip("/")
    return s.prefix.strip("/")


def resolve_sources(sources: Sequence[FilesystemSource | GitSource],
                    cache_dir: Path) -> list[SourceRoot]:
    """Each source as a directory to read (git sources cloned or fetched into ``cache_dir``)."""
    _check_names(sources)
    out = []
    for s in sources:
        if isinstance(s, GitSource):
            out.append(_resolve_git(s, cache_dir))
        else:
            if not s.root.is_dir():
                what = "is not a directory" if s.root.exists() else "does not exist"
                raise NotFoundError(f"source {s.name!r}: root {str(s.root)!r} {what}")
            out.append(SourceRoot(s.root, s.include, s.exclude, prefix=_prefix(s),
                                  record={"name": s.name, "type": "filesystem",
                                          "prefix": _prefix(s)}))
    return out


def public_url(url: str) -> str:
    """``url`` without a password or token in its user part, for metadata and messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.scheme and "@" in parts.netloc:
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=host))
    return url


_SCHEMES = frozenset({"https", "ssh", "git+ssh", "ssh+git", "file"})
_SCP_HOST = re.compile(r"^(?:[A-Za-z0-9._~%+-]+@)?(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])$")
_HELPER = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)::")
_TRANSPORTS = ("-c", "protocol.allow=never", "-c", "protocol.https.allow=always",
               "-c", "protocol.ssh.allow=always", "-c", "protocol.file.allow=always")
"""Git itself refuses every other transport too (``fd::``, ``ext::``, ``git://``, http)."""


def check_git_url(name: str, url: str) -> None:
    """Refuse a git source URL unless it is https, ssh (``ssh://`` or ``user@host:path``)
    or a local path: another transport can hang a compile (``fd::0`` reads the terminal),
    run a command (``ext::``) or fetch in clear text (``http://``, ``git://``)."""
    def refuse(why: str) -> ValidationError:
        return ValidationError(f"source {name!r}: url {public_url(url)[:200]!r} {why}; a git "
                               "source is an https:// or ssh:// URL, user@host:path, or a "
                               "local path")
    if not url or url.startswith("-") or any(ord(c) < 32 for c in url):
        raise refuse("is not a repository URL or path")
    helper = _HELPER.match(url)
    if helper:
        raise refuse(f"uses git's {helper.group(1)[:40]!r} remote helper")
    head = url.split("/", 1)[0]
    if "://" in url:
        scheme = url.split("://", 1)[0].lower()
        if scheme not in _SCHEMES:
            raise refuse(f"uses the {scheme[:40]!r} transport")
        return
    if ":" in head and not Path(url).is_absolute() \
            and not _SCP_HOST.match(head.rsplit(":", 1)[0]):
        raise refuse("names no host before ':'")


def _resolve_git(s: GitSource, cache_dir: Path) -> SourceRoot:
    check_git_url(s.name, s.url)
    key = hashlib.sha256(s.url.encode()).hexdigest()[:16]
    dest = cache_dir / "git" / f"{s.name}-{key}"
    git = _Git(s, dest)
    if not (dest / ".git").is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        git.run("clone", "--quiet", "--no-checkout", "--", s.url, str(dest), cwd=dest.parent)
    git.run("fetch", "--quiet", "--force", "--tags", "--prune", "origin",
            "+refs/heads/*:refs/remotes/origin/*")
    commit = git.commit_of(s.ref)
    git.run("checkout", "--quiet", "--force", "--detach", commit)
    git.run("clean", "--quiet", "-d", "--force", "-x")
    return SourceRoot(dest, s.include, s.exclude, prefix=_prefix(s),
                      record={"name": s.name, "type": "git", "prefix": _prefix(s),
                              "url": public_url(s.url), "ref": s.ref, "commit": commit})


class _Git:
    """git commands for one source's cache checkout, bounded in time, never prompting."""

    def __init__(self, source: GitSource, dest: Path) -> None:
        self.source = source
        self.dest = dest
        self.env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "",
                    "SSH_ASKPASS": "", "GCM_INTERACTIVE": "never", "LC_ALL": "C"}

    def run(self, *args: str, cwd: Path | None = None) -> str:
        cmd = ["git", *_TRANSPORTS, "-c", "core.hooksPath=/dev/null",
               "-c", "advice.detachedHead=false"]
        if cwd is None:
            cmd += ["-C", str(self.dest)]
        cmd += list(args)
        try:
            p = subprocess.run(cmd, cwd=cwd, env=self.env, capture_output=True, text=True,
                               timeout=self.source.timeout, stdin=subprocess.DEVNULL,
                               check=False)
        except FileNotFoundError as exc:
            raise ValidationError(f"source {self.source.name!r}: the git command is not "
                                  "installed") from exc
        except subprocess.TimeoutExpired as exc:
            raise ValidationError(f"source {self.source.name!r}: git {args[0]} of "
                                  f"{public_url(self.source.url)} took longer than "
                                  f"{self.source.timeout:g}s") from exc
        if p.returncode != 0:
            msg = " ".join(p.stderr.split()) or f"exit status {p.returncode}"
            raise ValidationError(f"source {self.source.name!r}: git {args[0]} of "
                                  f"{public_url(self.source.url)} failed: {msg[:500]}")
        return p.stdout

    def commit_of(self, ref: str) -> str:
        if ref.startswith("-"):
            raise ValidationError(f"source {self.source.name!r}: ref {ref!r} is not a ref")
        candidates = ["origin/HEAD" if ref == "HEAD" else f"refs/remotes/origin/{ref}",
                      f"refs/tags/{ref}", ref]
        for cand in candidates:
            try:
                out = self.run("rev-parse", "--verify", "--quiet", "--end-of-options",
                               f"{cand}^{{commit}}")
            except ValidationError:
                continue
            return out.strip()
        raise ValidationError(f"source {self.source.name!r}: ref {ref!r} names no branch, tag "
                              f"or commit of {public_url(self.source.url)}")

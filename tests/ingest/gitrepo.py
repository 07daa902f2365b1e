"""Local git repositories made by tests (no network): commit files, read back commits."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str, date: int = 1_700_000_000) -> str:
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_DATE": f"@{date} +0000",
           "GIT_COMMITTER_DATE": f"@{date} +0000"}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, timeout=60,
                          capture_output=True, text=True).stdout.strip()


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    return path


def commit(repo: Path, message: str, date: int = 1_700_000_000,
           remove: tuple[str, ...] = (), **files: str) -> str:
    """Write ``files`` (name -> text; ``__`` in a name is ``/``), remove ``remove``, commit."""
    for name, text in files.items():
        p = repo / name.replace("__", "/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    for name in remove:
        (repo / name).unlink()
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", message, date=date)
    return git(repo, "rev-parse", "HEAD")

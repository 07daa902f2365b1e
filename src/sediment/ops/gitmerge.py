"""``sediment merge-driver``: git's merge driver for layer files, and its installation.

Git runs the driver once per file that both branches changed, with the ancestor's, ours and
theirs versions in temporary files. Ids are unique over a layer *set*, not per file, so the
driver reads the sibling layers (the other ``AGENTS.*.db`` files of the same directory) of
the three commits from git, plans one renumbering for the whole set
(:func:`sediment.store.merge.plan`) and merges its own file with it; every file of the set
is merged with the same plan. The commits are found from what git leaves for a merge, a
cherry-pick, a revert or a rebase, and each is checked against the blob git handed over;
when they cannot be found (the driver run by hand, an unusual git command), the file is
merged alone, which is right whenever no other layer of the set changed on both sides.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sediment.errors import ValidationError
from sediment.format import LayerFile
from sediment.store.atomic import atomic_write, rewrite_text
from sediment.store.merge import BASE_FILE, MergeConflict, Side, merge_layer, plan, read_version

__all__ = ["ATTRIBUTES", "DRIVER_NAME", "GitSetup", "driver_command", "install",
           "merge_file"]

DRIVER_NAME = "sediment"
ATTRIBUTES = [
    f"{BASE_FILE} binary",
    f"AGENTS.*.db -text -diff merge={DRIVER_NAME}",
]
"""``.gitattributes`` lines: the compiled base is binary (never merged: recompile it);
every other layer file goes through the driver."""
_LAYER_FILE = re.compile(r"AGENTS\.[^/]+\.db")
_EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def _git(cwd: Path, *args: str, data: bool = False) -> bytes | None:
    try:
        p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False,
                           timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return p.stdout if data else p.stdout.strip()


def _text(cwd: Path, *args: str) -> str | None:
    out = _git(cwd, *args)
    return out.decode("utf-8", "replace") if out is not None else None


def _blob(cwd: Path, commit: str, path: str) -> str:
    """The blob id of ``path`` at ``commit`` (the empty blob's when absent)."""
    return _text(cwd, "rev-parse", "--verify", "-q", f"{commit}:{path}") or _EMPTY_BLOB


def _hash(cwd: Path, file: Path) -> str | None:
    return _text(cwd, "hash-object", "--no-filters", "--", str(file))


def _candidates(cwd: Path) -> list[str]:
    """Commits that may be "theirs": what ``git merge``, cherry-pick, revert and rebase
    leave in the environment or the git directory while they run."""
    found = [key[len("GITHEAD_"):] for key in os.environ if key.startswith("GITHEAD_")]
    for ref in ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD"):
        got = _text(cwd, "rev-parse", "--verify", "-q", ref)
        if got:
            found.append(got)
    gitdir = _text(cwd, "rev-parse", "--git-dir")
    if gitdir:
        done = Path(cwd, gitdir, "rebase-merge", "done")
        try:
            lines = done.read_text(encoding="utf-8").split("\n")
        except OSError:
            lines = []
        for line in reversed(lines):
            parts = line.split()
            if len(parts) >= 2 and parts[0] in ("pick", "p", "edit", "e", "reword", "r",
                                                "squash", "s", "fixup", "f"):
                found.append(parts[1])
                break
    return list(dict.fromkeys(found))


def _touching(cwd: Path, path: str, blob: str | None) -> list[str]:
    """Commits reachable from any ref that wrote ``blob`` at ``path``: how a single
    cherry-pick's commit is found (it leaves no trace while its merge runs)."""
    if blob is None:
        return []
    out = _text(cwd, "log", "--all", "--format=commit %H", "--raw", "--no-abbrev",
                "--no-renames", "--", path) or ""
    found, commit = [], ""
    for line in out.splitlines():
        if line.startswith("commit "):
            commit = line[len("commit "):]
        elif line.startswith(":") and commit:
            fields = line.split("\t", 1)[0].split()
            if len(fields) >= 4 and fields[3] == blob:
                found.append(commit)
    return found


def _commits(cwd: Path, path: str, o_hash: str | None, b_hash: str | None
             ) -> tuple[str, str] | None:
    """(ancestor, theirs): the commits whose ``path`` git handed over as %O and %B."""
    tried: set[str] = set()
    for scan in (False, True):
        for theirs in (_touching(cwd, path, b_hash) if scan else _candidates(cwd)):
            if theirs in tried or _blob(cwd, theirs, path) != b_hash:
                continue
            tried.add(theirs)
            bases = (_text(cwd, "merge-base", "--all", "HEAD", theirs) or "").split()
            bases += [_text(cwd, "rev-parse", "--verify", "-q", f"{theirs}^") or ""]
            ancestor = next((c for c in bases if c and _blob(cwd, c, path) == o_hash), None)
            if ancestor is not None:
                return ancestor, theirs
    return None


def _set(cwd: Path, commit: str, directory: str) -> dict[str, bytes]:
    """The layer files (not the base) of ``directory`` at ``commit``: name -> bytes."""
    listing = _git(cwd, "ls-tree", "--name-only", "-z", f"{commit}:{directory}", data=True)
    out: dict[str, bytes] = {}
    for raw in (listing or b"").split(b"\0"):
        name = raw.decode("utf-8", "replace")
        if _LAYER_FILE.fullmatch(name) and name != BASE_FILE:
            path = f"{directory}/{name}" if directory else name
            blob = _git(cwd, "cat-file", "blob", f"{commit}:{path}", data=True)
            out[name] = blob if blob is not None else b""
    return out


def _views(cwd: Path, path: str, files: tuple[Path, Path, Path]
           ) -> tuple[Side, Side, Side] | None:
    """The ancestor, ours and theirs versions of the whole layer set, or None when the
    commits behind git's temporary files cannot be found and checked."""
    if _git(cwd, "rev-parse", "--show-toplevel") is None:
        return None
    o_hash, a_hash, b_hash = (_hash(cwd, f) for f in files)
    if _blob(cwd, "HEAD", path) != a_hash:
        return None
    found = _commits(cwd, path, o_hash, b_hash)
    if found is None:
        return None
    ancestor, theirs = found
    directory = str(PurePosixPath(path).parent)
    directory = "" if directory == "." else directory
    return (_set(cwd, ancestor, directory), _set(cwd, "HEAD", directory),
            _set(cwd, theirs, directory))


@dataclass(frozen=True, slots=True)
class MergeResult:
    path: str
    chunks: int
    renumbered: dict[int, int]
    whole_set: bool
    """True when the sibling layers were read from git (the plan covered the whole set)."""


def merge_file(ancestor: Path, ours: Path, theirs: Path, path: str, *,
               cwd: Path | None = None) -> MergeResult:
    """Merge git's three versions of the layer file ``path`` into ``ours``.

    ``ours`` is replaced atomically by a valid layer, or left as it was when the merge is a
    :class:`MergeConflict`."""
    name = PurePosixPath(path).name
    if name == BASE_FILE:
        raise MergeConflict(f"{path} is the compiled base layer: it is never merged; "
                            "recompile instead (`sediment compile`) and commit the result")
    here = cwd or Path.cwd()
    try:
        data = tuple(f.read_bytes() for f in (ancestor, ours, theirs))
    except OSError as exc:
        raise ValidationError(f"cannot read a version of {path}: {exc}") from exc
    found = _views(here, path, (ancestor, ours, theirs))
    sides = [{**(found[i] if found is not None else {}), name: data[i]} for i in range(3)]
    the_plan = plan(*sides)
    if found is None and the_plan.ids and _git(here, "rev-parse", "--show-toplevel"):
        raise MergeConflict(
            f"{path}: both branches gave the same ids to different chunks, and the commits "
            "being merged were not found in git, so the other layer files cannot be "
            "renumbered with this one; merge, rebase or cherry-pick from a branch")
    layers = [read_version(d, f"{label} {path}")
              for d, label in zip(data, ("ancestor", "ours", "theirs"), strict=True)]
    merged = merge_layer(path, layers[0], layers[1], layers[2], the_plan)
    errors = LayerFile.from_bytes(bytes(merged), path).validate()
    if errors:
        raise MergeConflict(f"{path}: the merged layer is not valid ({errors[0]}); "
                            "nothing was written")
    atomic_write(ours, merged)
    return MergeResult(path, LayerFile.from_bytes(bytes(merged)).chunk_count,
                       dict(the_plan.ids), found is not None)


def driver_command() -> str:
    """The ``merge.sediment.driver`` value: this ``sediment`` (by name when it is the one
    on PATH, else by its full path) with git's placeholders."""
    exe = shutil.which("sediment")
    mine = Path(sys.argv[0]).resolve()
    if exe is None or Path(exe).resolve() != mine:
        exe_text = shlex.quote(str(mine)) if mine.name.startswith("sediment") else "sediment"
    else:
        exe_text = "sediment"
    return f"{exe_text} merge-driver %O %A %B %P"


@dataclass(frozen=True, slots=True)
class GitSetup:
    attributes: Path
    attributes_changed: bool
    config: list[tuple[str, str]]
    config_written: bool


def attributes_text(existing: str) -> str:
    """``existing`` with the driver's lines added where missing."""
    have = {line.strip() for line in existing.splitlines()}
    missing = [line for line in ATTRIBUTES if line not in have]
    if not missing:
        return existing
    sep = "" if not existing or existing.endswith("\n") else "\n"
    return existing + sep + "\n".join(missing) + "\n"


def install(root: Path) -> GitSetup:
    """Write ``.gitattributes`` in ``root``, and the driver's ``git config`` lines when
    ``root`` is in a git work tree (else they are returned for the caller to print)."""
    attrs = root / ".gitattributes"
    _, changed = rewrite_text(attrs, attributes_text)
    config = [(f"merge.{DRIVER_NAME}.name", "Sediment layer merge (append-only AGENTS.*.db)"),
              (f"merge.{DRIVER_NAME}.driver", driver_command())]
    written = _text(root, "rev-parse", "--is-inside-work-tree") == "true"
    if written:
        for key, value in config:
            if _git(root, "config", key, value) is None:
                raise ValidationError(f"git config {key} failed in {root}")
    return GitSetup(attrs, changed, config, written)

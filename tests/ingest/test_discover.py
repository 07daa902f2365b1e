"""discover(): glob semantics, pruning, symlinks and errors on real directory trees."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

import pytest

from sediment.errors import NotFoundError, ValidationError
from sediment.ingest import DEFAULT_EXCLUDED_DIRS, Skipped, discover


def make(root: Path, *paths: str) -> None:
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{rel}\n", encoding="utf-8")


def found(
    root: Path, include: Iterable[str], exclude: Iterable[str] = (), *,
    default_excludes: bool = True, on_skip: Callable[[Skipped], None] | None = None,
) -> list[str]:
    paths = discover(root, list(include), list(exclude), default_excludes=default_excludes,
                     on_skip=on_skip)
    return [str(p) for p in paths]


def test_globstar_matches_any_depth_including_root(tmp_path: Path) -> None:
    make(tmp_path, "README.md", "docs/a.md", "docs/deep/er/b.md", "docs/c.txt")
    assert found(tmp_path, ["**/*.md"]) == ["README.md", "docs/a.md", "docs/deep/er/b.md"]
    assert found(tmp_path, ["docs/*.md"]) == ["docs/a.md"]


def test_returns_sorted_relative_posix_paths(tmp_path: Path) -> None:
    make(tmp_path, "b.md", "a/z.md", "A.md", "a.md", "a-b.md", "a/b/c.md")
    result = discover(tmp_path, ["**/*.md"])
    assert all(isinstance(p, PurePosixPath) and not p.is_absolute() for p in result)
    names = [str(p) for p in result]
    assert names == sorted(names)
    assert names == ["A.md", "a-b.md", "a.md", "a/b/c.md", "a/z.md", "b.md"]
    assert discover(tmp_path, ["**/*.md"]) == result


def test_braces_expand(tmp_path: Path) -> None:
    make(tmp_path, "docs/a.md", "notes/b.md", "other/c.md", "x.rst", "y.txt")
    assert found(tmp_path, ["{docs,notes}/*.md"]) == ["docs/a.md", "notes/b.md"]
    assert found(tmp_path, ["*.{rst,txt}"]) == ["x.rst", "y.txt"]


def test_several_includes_are_a_union_without_duplicates(tmp_path: Path) -> None:
    make(tmp_path, "AGENTS.md", "docs/a.md")
    assert found(tmp_path, ["AGENTS.md", "**/*.md"]) == ["AGENTS.md", "docs/a.md"]


def test_bare_string_is_one_pattern(tmp_path: Path) -> None:
    make(tmp_path, "AGENTS.md", "A")
    assert discover(tmp_path, "AGENTS.md") == [PurePosixPath("AGENTS.md")]


def test_leading_dot_slash_is_ignored(tmp_path: Path) -> None:
    make(tmp_path, "docs/a.md")
    assert found(tmp_path, ["./docs/*.md"]) == ["docs/a.md"]


def test_excludes_files_and_whole_directories(tmp_path: Path) -> None:
    make(tmp_path, "docs/a.md", "docs/CHANGELOG.md", "docs/drafts/x.md", "docs/drafts/y/z.md",
         "notes/drafts/w.md")
    assert found(tmp_path, ["**/*.md"], ["**/CHANGELOG.md"]) == [
        "docs/a.md", "docs/drafts/x.md", "docs/drafts/y/z.md", "notes/drafts/w.md"]
    assert found(tmp_path, ["**/*.md"], ["docs/drafts"]) == [
        "docs/CHANGELOG.md", "docs/a.md", "notes/drafts/w.md"]
    assert found(tmp_path, ["**/*.md"], ["**/drafts"]) == ["docs/CHANGELOG.md", "docs/a.md"]
    assert found(tmp_path, ["**/*.md"], ["docs/drafts/**"]) == [
        "docs/CHANGELOG.md", "docs/a.md", "notes/drafts/w.md"]


def test_excluded_directories_are_not_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    make(tmp_path, "docs/a.md", "docs/drafts/deep/x.md", "node_modules/pkg/README.md")
    walked: list[str] = []
    real_scandir = os.scandir

    def spy(path: str) -> object:
        walked.append(Path(path).relative_to(tmp_path.resolve()).as_posix())
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", spy)
    assert found(tmp_path, ["**/*.md"], ["docs/drafts"]) == ["docs/a.md"]
    assert sorted(walked) == [".", "docs"]


def test_hidden_files_and_dirs_need_a_pattern_that_names_them(tmp_path: Path) -> None:
    make(tmp_path, "a.md", ".hidden.md", ".github/x.md", "docs/.secret/y.md", "docs/.z.md")
    assert found(tmp_path, ["**/*.md"]) == ["a.md"]
    assert found(tmp_path, ["**/.*.md"]) == [".hidden.md", "docs/.z.md"]
    assert found(tmp_path, [".github/**/*.md"]) == [".github/x.md"]
    assert found(tmp_path, ["docs/.secret/*.md"]) == ["docs/.secret/y.md"]


def test_default_junk_dirs_are_skipped_unless_turned_off_or_named(tmp_path: Path) -> None:
    junk = sorted(f"{d}/x.md" for d in DEFAULT_EXCLUDED_DIRS)
    make(tmp_path, "a.md", "pkg/node_modules/dep/README.md", *junk)
    assert found(tmp_path, ["**/*.md"]) == ["a.md"]
    everything = found(tmp_path, ["**/*.md"], default_excludes=False)
    hidden = [p for p in junk if p.startswith(".")]
    assert set(everything) == {"a.md", "pkg/node_modules/dep/README.md", *junk} - set(hidden)
    assert found(tmp_path, ["build/**/*.md"]) == ["build/x.md"]
    assert found(tmp_path, ["{dist,build}/*.md"]) == ["build/x.md", "dist/x.md"]


def test_git_directory_is_never_walked(tmp_path: Path) -> None:
    make(tmp_path, ".git/HEAD.md", "a.md")
    assert found(tmp_path, [".git/*.md", "*.md"], default_excludes=False) == ["a.md"]


def test_symlink_outside_root_is_skipped_and_reported(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    make(root, "a.md")
    make(outside, "secret.md", "dir/s.md")
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "leakdir").symlink_to(outside / "dir")
    (root / "leak.txt").symlink_to(outside / "secret.md")
    skipped: list[Skipped] = []
    assert found(root, ["**/*.md"], on_skip=skipped.append) == ["a.md"]
    assert sorted(s.path for s in skipped) == ["leak.md", "leakdir/"]
    reasons = {s.path: s.reason for s in skipped}
    assert reasons["leak.md"].startswith("symlink resolves outside the root")
    assert str((outside / "secret.md").resolve()) in reasons["leak.md"]


def test_symlinked_file_inside_root_is_kept_once(tmp_path: Path) -> None:
    make(tmp_path, "AGENTS.md", "docs/guide.md")
    (tmp_path / "CLAUDE.md").symlink_to("AGENTS.md")
    (tmp_path / "guide-link.md").symlink_to("docs/guide.md")
    skipped: list[Skipped] = []
    assert found(tmp_path, ["*.md"], on_skip=skipped.append) == ["AGENTS.md", "guide-link.md"]
    assert skipped == [Skipped("CLAUDE.md", "same file as AGENTS.md (symlink)")]
    skipped.clear()
    assert found(tmp_path, ["**/*.md"], on_skip=skipped.append) == ["AGENTS.md", "docs/guide.md"]
    assert skipped == [Skipped("CLAUDE.md", "same file as AGENTS.md (symlink)"),
                       Skipped("guide-link.md", "same file as docs/guide.md (symlink)")]


def test_symlinked_directories_and_broken_links_are_reported(tmp_path: Path) -> None:
    make(tmp_path, "docs/a.md")
    (tmp_path / "mirror").symlink_to("docs", target_is_directory=True)
    (tmp_path / "loop").symlink_to(".", target_is_directory=True)
    (tmp_path / "gone.md").symlink_to("missing.md")
    skipped: list[Skipped] = []
    assert found(tmp_path, ["**/*.md"], on_skip=skipped.append) == ["docs/a.md"]
    reasons = {s.path: s.reason for s in skipped}
    assert reasons == {
        "gone.md": "broken symlink",
        "loop/": "symlink to a directory; symlinked directories are not followed",
        "mirror/": "symlink to a directory; symlinked directories are not followed",
    }


def test_special_files_are_reported_not_returned(tmp_path: Path) -> None:
    make(tmp_path, "a.md")
    os.mkfifo(tmp_path / "pipe.md")
    skipped: list[Skipped] = []
    assert found(tmp_path, ["*.md"], on_skip=skipped.append) == ["a.md"]
    assert skipped == [Skipped("pipe.md", "not a regular file")]


def test_root_may_be_a_symlink(tmp_path: Path) -> None:
    make(tmp_path / "real", "a.md")
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    assert found(tmp_path / "link", ["*.md"]) == ["a.md"]


def test_relative_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make(tmp_path, "proj/a.md")
    monkeypatch.chdir(tmp_path)
    assert found(Path("proj"), ["*.md"]) == ["a.md"]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("/etc/*.md", "include pattern '/etc/*.md' is absolute"),
        ("C:/docs/*.md", "include pattern 'C:/docs/*.md' is absolute"),
        ("../*.md", "include pattern '../*.md' has a '..' segment"),
        ("docs/../../x.md", "include pattern 'docs/../../x.md' has a '..' segment"),
        ("{docs,..}/*.md", "include pattern '{docs,..}/*.md' has a '..' segment"),
        ("", "include pattern '' is empty"),
        ("{1..5000}.md", "include pattern '{1..5000}.md': Brace expansion has exceeded"),
    ],
)
def test_bad_include_patterns_are_rejected(tmp_path: Path, pattern: str, message: str) -> None:
    with pytest.raises(ValidationError, match="^" + re.escape(message)):
        discover(tmp_path, [pattern])


def test_bad_exclude_pattern_names_its_role(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"^exclude pattern '/tmp' is absolute"):
        discover(tmp_path, ["*.md"], ["/tmp"])


def test_dots_inside_names_are_fine(tmp_path: Path) -> None:
    make(tmp_path, "a..b.md", "v1.2/notes.md")
    assert found(tmp_path, ["**/*.md"]) == ["a..b.md", "v1.2/notes.md"]


def test_empty_include_list_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="at least one glob"):
        discover(tmp_path, [])


def test_missing_root(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(NotFoundError, match=r"root '.*nope' does not exist"):
        discover(missing, ["*.md"])


def test_root_that_is_a_file(tmp_path: Path) -> None:
    make(tmp_path, "a.md")
    with pytest.raises(NotFoundError, match=r"root '.*a\.md' is not a directory"):
        discover(tmp_path / "a.md", ["*.md"])


@pytest.mark.skipif(os.geteuid() == 0, reason="root can list any directory")
def test_unreadable_directory_is_reported(tmp_path: Path) -> None:
    make(tmp_path, "a.md", "locked/b.md")
    (tmp_path / "locked").chmod(0)
    try:
        skipped: list[Skipped] = []
        assert found(tmp_path, ["**/*.md"], on_skip=skipped.append) == ["a.md"]
        assert skipped == [Skipped("locked/", "unreadable directory: Permission denied")]
    finally:
        (tmp_path / "locked").chmod(0o755)


def test_directory_that_cannot_be_listed_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    make(tmp_path, "a.md", "locked/b.md")
    real_scandir = os.scandir

    def refuse(path: str) -> object:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", refuse)
    skipped: list[Skipped] = []
    assert found(tmp_path, ["**/*.md"], on_skip=skipped.append) == ["a.md"]
    assert skipped == [Skipped("locked/", "unreadable directory: Permission denied")]

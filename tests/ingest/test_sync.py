"""Sync: what it reuses, that it writes a full compile's bytes, what it reports."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from sediment.embed import HashEmbedder
from sediment.errors import NotFoundError, ValidationError
from sediment.format import LayerFile
from sediment.ingest.compile import CompileOptions, compile_layer
from sediment.ingest.connectors import (
    FilesystemSource,
    GitSource,
    SourceRoot,
    _Git,
    check_git_url,
    public_url,
    resolve_sources,
)
from sediment.ingest.sync import state_path, sync_layer, write_state
from sediment.ingest.watch import snapshot, watch
from sediment.store import LayerName, LayerSet, NewChunk
from tests.ingest.gitrepo import commit, make_repo

GUIDE = "# Guide\n\nInstall with pip.\n\n## Usage\n\nRun the tool.\n\n## Limits\n\nNone known.\n"


def write(root: Path, **files: str) -> Path:
    for name, text in files.items():
        p = root / name.replace("__", "/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def options(root: Path, out: Path, **kw: object) -> CompileOptions:
    return CompileOptions(root=root, include=["**/*.md"], out=out, **kw)  # type: ignore[arg-type]


def full_compile_bytes(opts: CompileOptions, previous: Path, tmp: Path) -> bytes:
    """The bytes a full compile (no state, no reuse) of ``opts`` with ``previous`` writes."""
    out = tmp / "full" / "AGENTS.db"
    out.parent.mkdir(exist_ok=True)
    compile_layer(CompileOptions(**{**{f: getattr(opts, f) for f in opts.__slots__},  # type: ignore[attr-defined]
                                    "out": out, "previous": previous}), HashEmbedder())
    return out.read_bytes()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write(tmp_path / "repo", **{"a.md": GUIDE, "b.md": "# B\n\nBee text.\n",
                                       "c.md": "# C\n\nSee text.\n\n## More\n\nMore of C.\n",
                                       "sub__d.md": "# D\n\nDee.\n"})


def first_compile(project: Path, out: Path) -> tuple[CompileOptions, HashEmbedder]:
    opts = options(project, out)
    embedder = HashEmbedder()
    write_state(opts, embedder, compile_layer(opts, embedder))
    return opts, embedder


def age(root: Path) -> None:
    """Make every file look older than the state's racy window (as after a while)."""
    old = time.time() - 3600
    for p in root.rglob("*.md"):
        os.utime(p, (old, old))


def test_unchanged_sync_reuses_everything_and_writes_the_same_bytes(
        project: Path, tmp_path: Path) -> None:
    age(project)
    out = tmp_path / "AGENTS.db"
    opts, embedder = first_compile(project, out)
    before = out.read_bytes()
    report = sync_layer(opts, embedder)
    assert out.read_bytes() == before
    assert not report.full and report.compile.reused == report.compile.chunks == 7
    assert report.compile.embedded == 0
    assert (report.added, report.changed, report.removed) == ([], [], [])


def test_added_changed_renamed_and_deleted_files_give_a_full_compiles_bytes(
        project: Path, tmp_path: Path) -> None:
    age(project)
    out = tmp_path / "AGENTS.db"
    opts, embedder = first_compile(project, out)
    old = {c.content: c.id for c in LayerFile.open(out).chunks()}
    previous = tmp_path / "previous.db"
    shutil.copy(out, previous)
    write(project, **{"new.md": "# New\n\nBrand new.\n",
                      "b.md": "# B\n\nBee text, rewritten.\n"})
    (project / "sub" / "d.md").rename(project / "sub" / "renamed.md")
    (project / "c.md").unlink()
    report = sync_layer(opts, embedder)
    assert report.added == ["new.md", "sub/renamed.md"]
    assert report.changed == ["b.md"]
    assert report.removed == ["c.md", "sub/d.md"]
    assert report.compile.reused == 3  # a.md's chunks
    assert out.read_bytes() == full_compile_bytes(opts, previous, tmp_path)
    new = {c.content: c.id for c in LayerFile.open(out).chunks()}
    for content in ("# Guide\n\nInstall with pip.", "## Usage\n\nRun the tool."):
        assert new[content] == old[content]
    assert "See text." not in "".join(new)
    assert new["# D\n\nDee."] != old["# D\n\nDee."]  # another path: another chunk


def test_unchanged_vectors_are_taken_from_the_previous_base(
        project: Path, tmp_path: Path) -> None:
    age(project)
    out = tmp_path / "AGENTS.db"
    opts, embedder = first_compile(project, out)
    old = LayerFile.open(out)
    old_vec = {c.id: np.array(old.vector(i)) for i, c in enumerate(old.chunks())}
    write(project, **{"b.md": "# B\n\nChanged.\n"})
    assert sync_layer(opts, embedder).compile.embedded == 1  # only the changed chunk
    new = LayerFile.open(out)
    for i, c in enumerate(new.chunks()):
        if c.id in old_vec:
            assert np.array_equal(new.vector(i), old_vec[c.id])


def test_a_same_size_edit_within_the_racy_window_is_seen(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "AGENTS.db"
    opts, embedder = first_compile(project, out)
    target = project / "b.md"
    st = target.stat()
    target.write_text("# B\n\nBee tent.\n", encoding="utf-8")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    report = sync_layer(opts, embedder)
    assert report.changed == ["b.md"]
    assert "# B\n\nBee tent." in [c.content for c in LayerFile.open(out).chunks()]


def test_a_state_for_another_base_or_options_means_a_full_compile(
        project: Path, tmp_path: Path) -> None:
    out = tmp_path / "AGENTS.db"
    opts, embedder = first_compile(project, out)
    report = sync_layer(options(project, out, max_chars=200), embedder)
    assert report.full and report.compile.reused == 0
    state_path(out).write_text("{not json", encoding="utf-8")
    assert sync_layer(opts, embedder).full
    assert not sync_layer(opts, embedder).full


def test_overrides_of_removed_and_changed_chunks_are_reported(
        project: Path, tmp_path: Path) -> None:
    out = tmp_path / "AGENTS.db"
    opts, embedder = first_compile(project, out)
    ids = {c.content: c.id for c in LayerFile.open(out).chunks()}
    layers = LayerSet({LayerName.BASE: out, LayerName.LOCAL: tmp_path / "AGENTS.local.db",
                       LayerName.USER: tmp_path / "AGENTS.user.db"})
    profile = embedder.profile.to_dict()
    for name, content in ((LayerName.LOCAL, "# B\n\nBee text."),
                          (LayerName.USER, "## More\n\nMore of C."),
                          (LayerName.LOCAL, "# Guide\n\nInstall with pip.")):
        layers.append(name, [NewChunk("canonical", f"override of {content}", "human", 1.0,
                                      id=ids[content])],
                      embedder.embed(["x"]), profile=profile, allowed=list(LayerName))
    write(project, **{"b.md": "# B\n\nBee text, changed.\n"})
    (project / "c.md").unlink()
    others = [("local", tmp_path / "AGENTS.local.db"), ("user", tmp_path / "AGENTS.user.db"),
              ("delta", tmp_path / "AGENTS.delta.db")]
    report = sync_layer(opts, embedder, others=others)
    got = {(o.id, o.layer, o.reason, o.source) for o in report.overrides}
    assert got == {(ids["# B\n\nBee text."], "local", "changed", "b.md:1"),
                   (ids["## More\n\nMore of C."], "user", "removed", "c.md:5")}


def test_sources_are_prefixed_and_the_same_path_stays_apart(tmp_path: Path) -> None:
    one = write(tmp_path / "one", **{"README.md": "# Readme\n\nSame text.\n"})
    two = write(tmp_path / "two", **{"README.md": "# Readme\n\nSame text.\n"})
    roots = resolve_sources([FilesystemSource("one", one, ["**/*.md"]),
                             FilesystemSource("two", two, ["**/*.md"], prefix="two")],
                            tmp_path / "cache")
    out = tmp_path / "AGENTS.db"
    compile_layer(CompileOptions(root=tmp_path, include=[], out=out, sources=roots),
                  HashEmbedder())
    chunks = list(LayerFile.open(out).chunks())
    assert sorted(c.sources[0] for c in chunks) == ["README.md:1", "two/README.md:1"]
    assert len({c.id for c in chunks}) == len(chunks)


@pytest.mark.parametrize(("sources", "message"), [
    ([FilesystemSource("a", Path("."), ["*"]), FilesystemSource("a", Path("."), ["*"])],
     "two sources are named 'a'"),
    ([FilesystemSource("a", Path("."), ["*"]), FilesystemSource("b", Path("."), ["*"])],
     "both have no prefix"),
    ([FilesystemSource("a/b", Path("."), ["*"])], "source name 'a/b'"),
    ([FilesystemSource("a", Path("."), ["*"], prefix="../x")], "without '..'"),
    ([GitSource("g", "--upload-pack=evil", ["*"])], "is not a repository URL"),
    ([GitSource("g", "ext::sh -c touch% /tmp/pwned", ["*"])], "remote helper"),
])
def test_bad_sources_are_named(tmp_path: Path, sources: list[FilesystemSource | GitSource],
                               message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        resolve_sources(sources, tmp_path)


@pytest.mark.parametrize(("url", "message"), [
    ("fd::0", "uses git's 'fd' remote helper"),
    ("ext::sh -c id", "uses git's 'ext' remote helper"),
    ("custom+x::anything", "uses git's 'custom+x' remote helper"),
    ("http://example.com/r.git", "uses the 'http' transport"),
    ("git://example.com/r.git", "uses the 'git' transport"),
    ("ftp://example.com/r.git", "uses the 'ftp' transport"),
    ("-oProxyCommand=id:x", "is not a repository URL or path"),
    ("host name:repo", "names no host before ':'"),
    ("https://example.com/\nr.git", "is not a repository URL or path"),
])
def test_git_sources_take_only_https_ssh_and_local_paths(tmp_path: Path, url: str,
                                                         message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)) as caught:
        resolve_sources([GitSource("g", url, ["*"])], tmp_path)
    assert "a git source is an https:// or ssh:// URL, user@host:path, or a local path" in str(
        caught.value)
    assert not (tmp_path / "git").exists()


@pytest.mark.parametrize("url", ["https://example.com/r.git", "ssh://git@example.com/r.git",
                                 "git@example.com:team/r.git", "example.com:r.git",
                                 "/srv/repo", "file:///srv/repo", "relative/repo",
                                 "git+ssh://example.com/r.git"])
def test_git_source_urls_that_are_allowed(url: str) -> None:
    check_git_url("g", url)


def test_git_itself_refuses_other_transports(tmp_path: Path) -> None:
    """Behind the URL check, git's own protocol.allow refuses a transport it let through."""
    git = _Git(GitSource("g", "fd::0", ["*"], timeout=20), tmp_path / "dest")
    with pytest.raises(ValidationError, match="transport 'fd' not allowed"):
        git.run("clone", "--quiet", "--no-checkout", "--", "fd::0", str(tmp_path / "dest"),
                cwd=tmp_path)


def test_a_missing_root_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match=r"source 'a': root .* does not exist"):
        resolve_sources([FilesystemSource("a", tmp_path / "nope", ["*"])], tmp_path)


def test_public_url_drops_credentials() -> None:
    assert public_url("https://user:tok@example.com/r.git") == "https://example.com/r.git"
    assert public_url("/srv/repo") == "/srv/repo"


def test_git_source_at_two_refs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "upstream")
    v1 = commit(repo, "v1", date=1_700_000_000,
                **{"README.md": "# Up\n\nFirst version.\n", "docs__x.md": "# X\n\nKept.\n"})
    from tests.ingest.gitrepo import git
    git(repo, "tag", "v1")
    v2 = commit(repo, "v2", date=1_700_100_000, remove=("README.md",),
                **{"docs__y.md": "# Y\n\nAdded in v2.\n", "docs__x.md": "# X\n\nKept.\n"})
    cache = tmp_path / "cache"
    out = tmp_path / "AGENTS.db"
    embedder = HashEmbedder()

    def at(ref: str) -> CompileOptions:
        roots = resolve_sources([GitSource("up", str(repo), ["**/*.md"], ref=ref)], cache)
        return CompileOptions(root=tmp_path, include=[], out=out, sources=roots)

    opts = at("v1")
    write_state(opts, embedder, compile_layer(opts, embedder))
    first = LayerFile.open(out)
    assert first.metadata is not None
    assert first.metadata["sources"] == [{"name": "up", "type": "git", "prefix": "up",
                                          "url": str(repo), "ref": "v1", "commit": v1}]
    by_content = {c.content: c for c in first.chunks()}
    assert by_content["# Up\n\nFirst version."].sources == ("up/README.md:1",)
    assert by_content["# X\n\nKept."].created_at_ms == 1_700_000_000_000
    kept_id = by_content["# X\n\nKept."].id
    previous = tmp_path / "previous.db"
    shutil.copy(out, previous)
    opts = at("main")
    report = sync_layer(opts, embedder)
    assert (report.added, report.removed) == (["up/docs/y.md"], ["up/README.md"])
    second = LayerFile.open(out)
    assert second.metadata is not None and second.metadata["sources"][0]["commit"] == v2
    contents = {c.content: c for c in second.chunks()}
    assert "# Up\n\nFirst version." not in contents
    assert contents["# X\n\nKept."].id == kept_id
    assert contents["# Y\n\nAdded in v2."].sources == ("up/docs/y.md:1",)
    assert out.read_bytes() == full_compile_bytes(opts, previous, tmp_path)


def test_git_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"source 'g': git clone of .*nowhere failed"):
        resolve_sources([GitSource("g", str(tmp_path / "nowhere"), ["*"])], tmp_path / "c")
    repo = make_repo(tmp_path / "r")
    commit(repo, "one", **{"a.md": "# A\n"})
    with pytest.raises(ValidationError, match="ref 'nope' names no branch, tag or commit"):
        resolve_sources([GitSource("g", str(repo), ["*"], ref="nope")], tmp_path / "c")


def test_watch_calls_back_once_per_settled_change(tmp_path: Path) -> None:
    root = write(tmp_path / "w", **{"a.md": "# A\n"})
    sources = [SourceRoot(root, ["**/*.md"])]
    stop = threading.Event()
    seen: list[tuple[tuple[str, int, int], ...]] = []

    def edit() -> None:
        for n in range(3):  # a burst of edits: one sync after it settles
            write(root, **{"a.md": f"# A{n}\n", f"b{n}.md": "# B\n"})
            time.sleep(0.01)

    def on_change() -> None:
        seen.append(snapshot(sources))

    timer = threading.Timer(0.2, edit)
    timer.start()
    calls = watch(sources, on_change, stop=stop, interval=0.05, debounce=0.3, max_changes=1)
    timer.join()
    assert calls == 1 and [p for p, _s, _m in seen[0]] == ["a.md", "b0.md", "b1.md", "b2.md"]
    stop.set()
    assert watch(sources, on_change, stop=stop, interval=0.05) == 0


def test_state_records_each_files_digest(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "AGENTS.db"
    first_compile(project, out)
    import json
    state = json.loads(state_path(out).read_text())
    assert state["base_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert state["files"]["b.md"][2] == hashlib.sha256(b"# B\n\nBee text.\n").hexdigest()


def test_sources_config_resolves_paths_against_the_file(tmp_path: Path) -> None:
    from sediment.config import load_config

    (tmp_path / "sediment.toml").write_text(
        '[compile]\ninclude = ["**/*.txt"]\n\n'
        '[[sources]]\nname = "here"\nroot = "notes"\n\n'
        '[[sources]]\nname = "near"\ntype = "git"\nurl = "../hb"\nref = "v2"\n'
        'include = ["*.md"]\n\n'
        '[[sources]]\nname = "far"\ntype = "git"\nurl = "git@example.com:team/hb.git"\n\n'
        '[[sources]]\nname = "web"\ntype = "git"\nurl = "https://example.com/hb.git"\n'
        'prefix = "w"\n', encoding="utf-8")
    cfg = load_config(tmp_path, env={})
    here, near, far, web = cfg.sources
    assert (here.type, here.root, here.include) == ("filesystem", tmp_path / "notes",
                                                    ["**/*.txt"])
    assert (near.url, near.ref, near.include) == (str(tmp_path / "../hb"), "v2", ["*.md"])
    assert far.url == "git@example.com:team/hb.git" and far.ref == "HEAD"
    assert (web.url, web.prefix) == ("https://example.com/hb.git", "w")

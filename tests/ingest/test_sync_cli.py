"""``sediment sync`` end to end: the real command on real files and local git repositories."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from sediment.embed import HashEmbedder
from sediment.format import LayerFile
from sediment.store import LayerName, LayerSet, NewChunk
from tests import zygote
from tests.conftest import SEDIMENT, Runner
from tests.ingest.gitrepo import commit, git, make_repo

CONFIG = '[compile]\ninclude = ["docs/**/*.md"]\n'


def project(root: Path, config: str = CONFIG) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "sediment.toml").write_text(config, encoding="utf-8")
    for n in range(3):
        (root / "docs" / f"p{n}.md").write_text(f"# Page {n}\n\nText of page {n}.\n",
                                               encoding="utf-8")
    return root


def edit(root: Path) -> None:
    """One of each: an added, a changed, a renamed and a deleted file."""
    docs = root / "docs"
    (docs / "new.md").write_text("# New\n\nAdded.\n", encoding="utf-8")
    (docs / "p0.md").write_text("# Page 0\n\nRewritten.\n", encoding="utf-8")
    (docs / "p1.md").rename(docs / "moved.md")
    (docs / "p2.md").unlink()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sync_writes_what_a_full_compile_writes(sediment: Runner, tmp_path: Path) -> None:
    a = project(tmp_path / "a")
    assert sediment("compile", cwd=a).code == 0
    shutil.copytree(a, tmp_path / "b")
    b = tmp_path / "b"
    for root in (a, b):
        edit(root)
    synced = sediment("sync", "--json", cwd=a)
    assert synced.code == 0, synced.err
    got = synced.json()
    assert (got["added"], got["changed"], got["removed"]) == (
        ["docs/moved.md", "docs/new.md"], ["docs/p0.md"], ["docs/p1.md", "docs/p2.md"])
    assert got["full"] is False
    full = sediment("sync", "--full", "--json", cwd=b)
    assert full.code == 0 and full.json()["full"] is True
    assert sha(a / "AGENTS.db") == sha(b / "AGENTS.db") == got["sha256"]
    again = sediment("sync", cwd=a)
    assert again.code == 0
    assert "0 added, 0 changed, 0 removed file(s); reused 3 chunks" in again.out


def test_sync_reports_overrides_of_changed_and_removed_chunks(
        sediment: Runner, tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    assert sediment("compile", cwd=root).code == 0
    ids = {c.content: c.id for c in LayerFile.open(root / "AGENTS.db").chunks()}
    layers = LayerSet({LayerName.BASE: root / "AGENTS.db",
                       LayerName.LOCAL: root / "AGENTS.local.db"})
    embedder = HashEmbedder()
    for n in (0, 2):
        layers.append(LayerName.LOCAL, [NewChunk("canonical", f"Better page {n}.", "human", 1.0,
                                                 id=ids[f"# Page {n}\n\nText of page {n}."])],
                      embedder.embed(["x"]), profile=embedder.profile.to_dict())
    edit(root)
    r = sediment("sync", cwd=root)
    assert r.code == 0, r.err
    changed, removed = (ids[f"# Page {n}\n\nText of page {n}."] for n in (0, 2))
    assert (f"override: chunk {changed} in the local layer "
            f"({root / 'AGENTS.local.db'}) overrode a base chunk whose text was changed "
            "(was docs/p0.md:1)") in r.err
    assert f"chunk {removed} in the local layer" in r.err
    assert "whose text was removed (was docs/p2.md:1)" in r.err
    assert "2 override(s) to review" in r.out


def test_git_source_configured_and_moved_to_another_ref(
        sediment: Runner, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "upstream")
    first = commit(repo, "one", **{"guide__a.md": "# A\n\nFirst.\n"})
    git(repo, "tag", "v1")
    second = commit(repo, "two", date=1_700_500_000, **{"guide__a.md": "# A\n\nSecond.\n",
                                                        "guide__b.md": "# B\n\nNew.\n"})
    root = project(tmp_path / "p")
    base = CONFIG + ('[[sources]]\nname = "local"\ninclude = ["docs/**/*.md"]\n\n'
                     '[[sources]]\nname = "up"\ntype = "git"\nurl = "../upstream"\n'
                     'include = ["guide/*.md"]\n')
    (root / "sediment.toml").write_text(base + 'ref = "v1"\n', encoding="utf-8")
    c = sediment("compile", "--json", cwd=root)
    assert c.code == 0, c.err
    f = LayerFile.open(root / "AGENTS.db")
    assert f.metadata is not None and f.metadata["sources"][1]["commit"] == first
    assert {s for ch in f.chunks() for s in ch.sources} == {
        "docs/p0.md:1", "docs/p1.md:1", "docs/p2.md:1", "up/guide/a.md:1"}
    (root / "sediment.toml").write_text(base + 'ref = "main"\n', encoding="utf-8")
    s = sediment("sync", "--json", cwd=root)
    assert s.code == 0, s.err
    got = s.json()
    assert (got["added"], got["changed"], got["removed"]) == (
        ["up/guide/b.md"], ["up/guide/a.md"], [])
    assert got["reused"] == 3
    f = LayerFile.open(root / "AGENTS.db")
    assert f.metadata is not None and f.metadata["sources"][1]["commit"] == second
    assert "# A\n\nSecond." in {ch.content for ch in f.chunks()}


@pytest.mark.parametrize(("config", "message"), [
    ('[[sources]]\nname = "x"\nroots = "."\n', "unknown key(s) roots for a filesystem source"),
    ('[[sources]]\nname = "x"\ntype = "svn"\n', "sources[0].type must be one of filesystem, git"),
    ('[[sources]]\nname = "x"\ntype = "git"\n', "sources[0]: url is required for a git source"),
    ('[[sources]]\ninclude = ["*.md"]\n', "sources[0]: name is required"),
    ('[sources]\nname = "x"\n', "sources (an array of tables, [[sources]]) must be list"),
    ('[[sources]]\nname = "g"\ntype = "git"\nurl = "./nowhere"\n',
     "source 'g': git clone of"),
    ('[[sources]]\nname = "g"\ntype = "git"\nurl = "fd::0"\ninclude = ["*.md"]\n',
     "source 'g': url 'fd::0' uses git's 'fd' remote helper"),
])
def test_bad_sources_config_is_one_error_line(sediment: Runner, tmp_path: Path, config: str,
                                              message: str) -> None:
    (tmp_path / "sediment.toml").write_text(config, encoding="utf-8")
    r = sediment("sync", cwd=tmp_path)
    assert r.code == 1, r.err
    assert r.err.startswith("Error: ") and message in r.err and r.err.count("\n") == 1


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    q: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                q.put(line)
        except ValueError:  # the pipe was closed under us once the test ended
            pass

    threading.Thread(target=pump, daemon=True).start()
    return q


def test_watch_resyncs_on_change_and_stops_on_sigterm(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    env = {**os.environ, "SEDIMENT_EMBEDDER": "hash"}
    with subprocess.Popen([zygote.script(str(SEDIMENT)),
                           "sync", "--watch", "--json", "--interval", "0.1",
                           "--debounce", "0.2"], cwd=root, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL) as proc:
        try:
            lines = _lines(proc)
            first = json.loads(lines.get(timeout=60))
            assert first["full"] is True and first["chunks"] == 3
            (root / "docs" / "p1.md").write_text("# Page 1\n\nEdited.\n", encoding="utf-8")
            second = json.loads(lines.get(timeout=60))
            assert second["changed"] == ["docs/p1.md"] and second["reused"] == 2
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)


def test_sync_with_a_kcp_manifest_writes_a_full_compiles_bytes(
        sediment: Runner, tmp_path: Path) -> None:
    from tests.kcp.project import DOCS

    a = tmp_path / "a"
    for name, text in DOCS.items():
        (a / name).parent.mkdir(parents=True, exist_ok=True)
        (a / name).write_text(text, encoding="utf-8")
    assert sediment("compile", cwd=a).code == 0
    shutil.copytree(a, tmp_path / "b")
    b = tmp_path / "b"
    for root in (a, b):
        (root / "docs" / "cluster.md").write_text("# Cluster\n\nFour node pools now.\n",
                                                  encoding="utf-8")
        (root / "docs" / "auth.md").unlink()
    synced = sediment("sync", "--json", cwd=a)
    assert synced.code == 0, synced.err
    assert synced.json()["reused"] > 0 and synced.json()["changed"] == ["docs/cluster.md"]
    assert sediment("sync", "--full", cwd=b).code == 0
    assert sha(a / "AGENTS.db") == sha(b / "AGENTS.db")


def test_compile_flags_name_one_tree_and_ignore_sources(sediment: Runner, tmp_path: Path) -> None:
    root = project(tmp_path / "p", CONFIG + '[[sources]]\nname = "docs"\nprefix = "d"\n'
                                            'include = ["docs/**/*.md"]\n')
    assert sediment("compile", cwd=root).code == 0
    f = LayerFile.open(root / "AGENTS.db")
    assert f.metadata is not None and f.metadata["sources"][0]["prefix"] == "d"
    assert {s for c in f.chunks() for s in c.sources} == {f"d/docs/p{n}.md:1" for n in range(3)}
    assert sediment("compile", "--include", "docs/p0.md", cwd=root).code == 0
    f = LayerFile.open(root / "AGENTS.db")
    assert f.metadata is not None and "sources" not in f.metadata
    assert [c.sources for c in f.chunks()] == [("docs/p0.md:1",)]

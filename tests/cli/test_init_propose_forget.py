"""``sediment init`` (item 13), tidy lock files (item 16), ``propose`` and ``forget`` (item
14), through the real command."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

from tests.cli.conftest import Runner


def project(sediment: Runner, root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "guide.md").write_text("# Guide\n\nDeploys run nightly from main.\n")
    r = sediment("compile", "--root", str(root), "--out", str(root / "AGENTS.db"), cwd=root)
    assert r.code == 0, r.err
    return root


def test_init_scaffolds_and_is_idempotent(sediment: Runner, tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("node_modules/\n")
    r = sediment("init", "--root", str(tmp_path))
    assert r.code == 0, r.err
    toml = (tmp_path / "sediment.toml").read_text()
    assert tomllib.loads(toml) == {"store": {}, "embedder": {}, "compile": {}}
    assert "# name = \"minilm\"" in toml
    ignore = (tmp_path / ".gitignore").read_text()
    assert ignore.startswith("node_modules/\n")
    for pattern in ("AGENTS.local.db", ".sediment.lock", ".AGENTS*.faiss", ".AGENTS*.tmp"):
        assert pattern in ignore.splitlines()
    start = r.out.index("{")
    config = json.loads(r.out[start:r.out.index("\n}", start) + 2])
    server = config["mcpServers"]["sediment"]
    assert server["args"] == ["serve", "--dir", str(tmp_path.resolve())]
    again = sediment("init", "--root", str(tmp_path), "--json")
    assert again.code == 0 and not again.json()["config_written"]
    assert not again.json()["gitignore_changed"]
    assert (tmp_path / ".gitignore").read_text() == ignore


def test_lock_files_are_one_per_directory_and_ignored(sediment: Runner, tmp_path: Path) -> None:
    root = project(sediment, tmp_path)
    assert sediment("init", "--root", str(root)).code == 0
    for scope in ("local", "delta"):
        w = sediment("write", "--dir", str(root), "--scope", scope, "--kind", "note",
                     "--content", f"{scope} note", "--confidence", "0.5")
        assert w.code == 0, w.err
    dotfiles = sorted(p.name for p in root.iterdir() if p.name.startswith("."))
    assert dotfiles == [".AGENTS.db.sync.json", ".gitignore", ".sediment.lock"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                             "--untracked-files=all"], capture_output=True, text=True,
                            check=True).stdout
    listed = {line[3:] for line in status.splitlines()}
    assert not {".sediment.lock", "AGENTS.local.db", ".AGENTS.db.sync.json"} & listed
    assert {"AGENTS.db", "AGENTS.delta.db", "sediment.toml", ".gitignore"} <= listed


def test_propose_and_forget(sediment: Runner, tmp_path: Path) -> None:
    root = project(sediment, tmp_path)
    w = sediment("write", "--dir", str(root), "--scope", "local", "--kind", "note",
                 "--content", "Rollbacks use helm rollback.", "--confidence", "0.7", "--json")
    cid = w.json()["id"]
    p = sediment("propose", str(cid), "--dir", str(root), "--json")
    assert p.code == 0, p.err
    assert p.json()["copied_to_delta"] and not p.json()["already_pending"]
    again = sediment("propose", str(cid), "--dir", str(root))
    assert again.code == 0 and "already has pending proposal" in again.out
    listed = sediment("proposals", "list", "--dir", str(root), "--json").json()
    assert [x["context_id"] for x in listed] == [cid]
    assert sediment("propose", "1", "--dir", str(root)).code == 1  # a base chunk

    def hits() -> list[int]:
        return [h["id"] for h in sediment("search", "helm rollback deploys nightly", "--dir",
                                          str(root), "--json").json()["results"]]

    assert cid in hits() and 1 in hits()
    assert sediment("forget", str(cid), "--dir", str(root)).code == 2  # --reason required
    f = sediment("forget", str(cid), "--reason", "wrong: we use argo", "--dir", str(root),
                 "--json", env={"SEDIMENT_ACTOR": "dana"})
    assert f.code == 0, f.err
    assert f.json()["layer"] == "local" and not f.json()["already_forgotten"]
    b = sediment("forget", "1", "--reason", "stale", "--dir", str(root), "--json")
    assert b.code == 0 and b.json()["layer"] == "user", b.err
    assert cid not in hits() and 1 not in hits()
    shown = sediment("inspect", str(root / "AGENTS.local.db"), "--id", str(cid))
    assert "meta.forget" in shown.out and "wrong: we use argo" in shown.out
    assert "forget by dana (wrong: we use argo)" in shown.out  # the actor, not only "human"
    twice = sediment("forget", str(cid), "--reason", "again", "--dir", str(root))
    assert "already forgotten" in twice.out
    assert sediment("forget", "999", "--reason", "x", "--dir", str(root)).code == 1

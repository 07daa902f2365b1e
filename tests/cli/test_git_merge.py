"""``sediment init --git`` and ``sediment merge-driver`` under the real ``git merge``: two
branches that both proposed, accepted, saved a memory and recorded context merge into valid
layers, the same whichever way, and a layer changed in place is a conflict."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sediment.format import Chunk, LayerFile, encode_layer
from tests.cli.conftest import Runner

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

LAYERS = ("AGENTS.user.db", "AGENTS.delta.db")


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEDIMENT_EMBEDDER": "hash"}
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          check=check, timeout=300)


def layers(repo: Path) -> dict[str, bytes]:
    return {name: (repo / name).read_bytes() for name in LAYERS}


def branch_work(sediment: Runner, repo: Path, who: str) -> None:
    """Context recorded, proposed and accepted; a global memory saved; committed."""
    git(repo, "checkout", "-q", "-b", who, "main")
    wrote = sediment("write", "--scope", "delta", "--kind", "note", "--confidence", "0.8",
                     "--content", f"{who}: the {who}-cache is redis", "--json", cwd=repo)
    assert wrote.code == 0, wrote.err
    proposal = sediment("propose", str(wrote.json()["id"]), "--json", cwd=repo).json()
    accepted = sediment("proposals", "accept", str(proposal["proposal_id"]), cwd=repo)
    assert accepted.code == 0, accepted.err
    saved = sediment("memory", "save", f"{who} prefers {who}-tabs", "--category",
                     "preference", "--scope", "global", cwd=repo)
    assert saved.code == 0, saved.err
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", who)


def test_two_branches_merge_with_the_driver_both_ways_and_conflicts_are_reported(
        sediment: Runner, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Test")
    git(repo, "config", "user.email", "test@example.com")
    init = sediment("init", "--git", cwd=repo)
    assert init.code == 0, init.err
    assert "AGENTS.*.db -text -diff merge=sediment" in (repo / ".gitattributes").read_text()
    assert "AGENTS.db binary" in (repo / ".gitattributes").read_text()
    driver = git(repo, "config", "merge.sediment.driver").stdout.strip()
    assert driver.endswith("merge-driver %O %A %B %P")
    first = sediment("write", "--scope", "delta", "--kind", "note", "--confidence", "0.9",
                     "--content", "shared starting note", cwd=repo)
    assert first.code == 0, first.err
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    branch_work(sediment, repo, "alpha")
    branch_work(sediment, repo, "beta")

    merged = {}
    for ours, theirs in (("alpha", "beta"), ("beta", "alpha")):
        git(repo, "checkout", "-q", ours)
        m = git(repo, "merge", "--no-edit", theirs, check=False)
        assert m.returncode == 0, m.stdout + m.stderr
        assert "sediment merge-driver: merged AGENTS.delta.db" in m.stderr
        merged[ours] = layers(repo)
        if ours == "alpha":
            checked = sediment("validate", *LAYERS, cwd=repo)
            assert checked.code == 0, checked.out
            states = sediment("proposals", "list", "--json", cwd=repo).json()
            got = states["proposals"] if isinstance(states, dict) else states
            assert sorted(p["status"] for p in got) == ["accepted", "accepted"]
            hits = sediment("search", "cache is redis", "--json", cwd=repo).json()
            text = str(hits)
            assert "alpha: the alpha-cache" in text and "beta: the beta-cache" in text
            memories = sediment("memory", "list", "--scope", "global", cwd=repo).out
            assert "alpha prefers alpha-tabs" in memories
            assert "beta prefers beta-tabs" in memories
            assert "[g1," in memories and "[g2," in memories  # both branches' g1, one renamed
        git(repo, "reset", "-q", "--hard", "HEAD~1")
    assert merged["alpha"] == merged["beta"]

    # A branch that rewrote a chunk in place cannot be merged: git reports the conflict
    # with the driver's reason, and ours is left as it was.
    git(repo, "checkout", "-q", "-b", "rewrite", "beta")
    path = repo / "AGENTS.delta.db"
    f = LayerFile.open(path)
    chunks = [Chunk(c.id, c.kind, "edited: " + c.content if i == 0 else c.content, c.author,
                    c.confidence, c.created_at_ms, c.sources) for i, c in enumerate(f.chunks())]
    data = encode_layer(chunks, np.asarray(f.embeddings)[f.rows], metadata=f.metadata)
    del f
    path.write_bytes(bytes(data))
    git(repo, "commit", "-q", "-am", "rewrite in place")
    git(repo, "checkout", "-q", "alpha")
    before = (repo / "AGENTS.delta.db").read_bytes()
    m = git(repo, "merge", "--no-edit", "rewrite", check=False)
    assert m.returncode != 0
    assert "CONFLICT" in m.stdout and "was changed in place on theirs" in m.stderr
    assert (repo / "AGENTS.delta.db").read_bytes() == before

"""kill -9 at the commit points of real commands (issue 13, items 11, 12 and 13).

A child runs the real ``sediment`` command and holds still at a rename (before: the
temporary is written; after: the layer is committed); the test kills it with SIGKILL and
checks what a crash there leaves: valid files, no acknowledged write lost, no temporary
kept past the next write, and for ``proposals accept`` a state that is never both pending
and accepted and that accepting again repairs. The full randomised run is
``python -m bench.reliability`` (docs/reliability.md).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sediment.embed import HashEmbedder
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.ops import WriteRequest, write_context
from sediment.ops.propose import propose
from sediment.review.decisions import get_proposal
from sediment.review.provenance import inspect_chunk
from sediment.search import SearchRequest, search
from sediment.store import LayerName, LayerSet
from tests.conftest import REPO, Runner
from tests.store.killpoint import PAUSED

EMB = HashEmbedder()
PROPOSED = "Retries of the billing API back off exponentially after a 429."


def make_base(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    docs = ["The deploy job runs nightly.", "Requests to /billing need the X-Account header."]
    chunks = [Chunk(i, "canonical", t, "human", 1.0, 0, (f"docs/a.md:{i}",))
              for i, t in enumerate(docs, 1)]
    (directory / "AGENTS.db").write_bytes(encode_layer(
        chunks, EMB.embed(docs), metadata={"v": 1, "embedding_profile": EMB.profile.to_dict()}))
    return directory


def kill_at(nth: int, when: str, *args: str) -> None:
    """Run ``sediment ARGS`` until its ``nth`` rename (``when`` before or after), kill -9."""
    env = dict(os.environ, SEDIMENT_EMBEDDER="hash")
    child = subprocess.Popen([sys.executable, "-m", "tests.store.killpoint", str(nth), when,
                              *args], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    guard = threading.Timer(60, child.kill)
    guard.start()
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        assert line == PAUSED, (line, child.stderr.read() if child.stderr else "")
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        guard.cancel()
        child.kill()
        child.wait(timeout=30)
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()


def temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def assert_valid(directory: Path) -> None:
    for p in directory.glob("*.db"):
        assert LayerFile.open(p).validate() == [], p


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_write_killed_at_its_rename(sediment: Runner, tmp_path: Path, when: str) -> None:
    root = make_base(tmp_path / "store")
    acked = write_context(LayerSet.from_directory(root), EMB,
                          WriteRequest(content="Acknowledged before the crash.", kind="note",
                                       confidence=0.5, sources=[], scope="local"), actor="tester")
    kill_at(1, when, "write", "--dir", str(root), "--kind", "note", "--content", "In flight.",
            "--confidence", "0.5")
    assert_valid(root)
    local = {c.id: c.content for c in LayerFile.open(root / "AGENTS.local.db").chunks()}
    assert local[acked] == "Acknowledged before the crash."
    assert ("In flight." in local.values()) == (when == "after")
    left = temporaries(root)
    assert len(left) == (1 if when == "before" else 0), left
    if left:
        assert left[0].startswith(".AGENTS.local.db.")
    r = sediment("write", "--dir", str(root), "--kind", "note", "--content", "Next write.",
                 "--confidence", "0.5")
    assert r.code == 0, r.err
    assert temporaries(root) == []
    assert_valid(root)


def shown_layer(ls: LayerSet, chunk_id: int) -> str | None:
    hits = search(ls, SearchRequest(text=PROPOSED, k=5, mode="lexical")).hits
    return next((h.layer.value for h in hits if h.chunk.id == chunk_id), None)


@pytest.mark.parametrize(("nth", "when"), [(1, "before"), (1, "after"), (2, "before"),
                                           (2, "after")])
def test_accept_killed_between_its_commits(sediment: Runner, tmp_path: Path, nth: int,
                                           when: str) -> None:
    """Accept commits user (rename 1), then delta (rename 2): every point is repairable."""
    root = make_base(tmp_path / "store")
    ls = LayerSet.from_directory(root)
    cid = write_context(ls, EMB, WriteRequest(content=PROPOSED, kind="note", confidence=0.8,
                                              sources=[], scope="delta"), actor="tester")
    pid = propose(ls, cid, actor="tester").proposal_id
    kill_at(nth, when, "proposals", "accept", str(pid), "--dir", str(root))
    assert_valid(root)
    ls = LayerSet.from_directory(root)
    status = get_proposal(ls, pid).status
    layer = shown_layer(ls, cid)
    assert (status, layer) in {("pending", "delta"), ("accepted", "user")}, (status, layer)
    expect_done = (nth, when) != (1, "before")
    assert (status == "accepted") == expect_done
    report = inspect_chunk(root / LayerName.DELTA.file_name, cid)
    assert report.proposals == ((pid, status),)
    r = sediment("proposals", "accept", str(pid), "--dir", str(root), "--json")
    assert r.code == 0, r.err
    ls = LayerSet.from_directory(root)
    view = get_proposal(ls, pid)
    assert view.status == "accepted" and shown_layer(ls, cid) == "user"
    assert [d.verdict for d in view.decisions] == ["accept"]
    user = LayerFile.open(root / LayerName.USER.file_name)
    assert [c.id for c in user.chunks()] == [cid]
    assert temporaries(root) == []
    r = sediment("proposals", "reject", str(pid), "--reason", "late", "--dir", str(root))
    assert r.code == 1 and "already accepted" in r.err


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_context_write_killed_at_its_rename(sediment: Runner, tmp_path: Path,
                                               when: str) -> None:
    """The context store's i8 file, whose events share one zero row, is replaced as
    atomically as any layer: the old file or the new one, never a torn one."""
    from sediment.context import ContextLoop, FileContextStore

    root = make_base(tmp_path / "store")
    directory = root / ".sediment" / "context"
    store = FileContextStore(directory, profile=EMB.profile.to_dict(), dim=EMB.profile.dim)
    loop = ContextLoop(store, EMB, project=root.name, cache_dir=directory / "cache")
    loop.store_context("me", "Acknowledged before the crash.", "task")
    kill_at(1, when, "context", "store", "In flight.", "--type", "task", "--dir", str(root),
            "--actor", "me")
    active = directory / "AGENTS.local.db"
    assert_valid(directory)
    f = LayerFile.open(active)
    contents = {c.content for c in f.chunks()}
    assert "Acknowledged before the crash." in contents
    assert ("In flight." in contents) == (when == "after")
    assert f.element_type == "i8"
    items = sum(1 for c in f.chunks() if not c.kind.startswith("meta."))
    assert f.embedding_info.rows == items + 1
    r = sediment("context", "store", "Next write.", "--type", "task", "--dir", str(root),
                 "--actor", "me", "--embedder", "hash")
    assert r.code == 0, r.err
    assert temporaries(directory) == []
    assert_valid(directory)
    after = FileContextStore(directory, profile=EMB.profile.to_dict(), dim=EMB.profile.dim)
    texts = {i.chunk.content for i in after.items()}
    assert {"Acknowledged before the crash.", "Next write."} <= texts
    assert ("In flight." in texts) == (when == "after")


@pytest.mark.parametrize(("nth", "when"), [(n, w) for n in (1, 2, 3, 4)
                                           for w in ("before", "after")])
def test_a_rotation_killed_anywhere_shows_everything_and_reruns(
        sediment: Runner, tmp_path: Path, nth: int, when: str) -> None:
    """``compact --rotate`` renames the new base (1), the installed base (2), user (3) and
    delta (4): at every point the accepted chunk stays searchable, and the same command
    run again finishes with a base that holds it."""
    root = make_base(tmp_path / "store")
    ls = LayerSet.from_directory(root)
    cid = write_context(ls, EMB, WriteRequest(content=PROPOSED, kind="note", confidence=0.8,
                                              sources=[], scope="delta"), actor="tester")
    assert sediment("proposals", "accept", str(propose(ls, cid, actor="tester").proposal_id),
                    "--dir",
                    str(root)).code == 0
    command = ("compact", "--dir", str(root), "--out", str(root / "NEW.db"), "--rotate")
    kill_at(nth, when, *command)
    assert_valid(root)
    assert shown_layer(LayerSet.from_directory(root), cid) is not None
    r = sediment(*command)
    assert r.code == 0, r.err
    assert {c.id for c in LayerFile.open(root / "NEW.db").chunks()} >= {1, 2, cid}
    assert (root / "NEW.db").read_bytes() == (root / "AGENTS.db").read_bytes()
    assert LayerFile.open(root / "AGENTS.user.db").chunk_count == 0
    assert shown_layer(LayerSet.from_directory(root), cid) == "base"
    assert temporaries(root) == []

"""Inspecting one chunk: resolved sources, versions and events in time order."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sediment.errors import NotFoundError
from sediment.review import accept, inspect_chunk, reject
from sediment.store import LayerSet
from tests.review.helpers import agent_propose, agent_write, make_base


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(
        "# Guide\nRequests to /billing MUST include the X-Account header.\nline three\n")
    make_base(tmp_path)
    return tmp_path


def test_file_sources_show_the_current_line(repo: Path) -> None:
    ls = LayerSet.from_directory(repo)
    cid = agent_write(ls, "Billing needs a header.", sources=[
        "docs/guide.md:2", "docs/guide.md:9", "docs/missing.md:1", "../outside.md:1", 1])
    report = inspect_chunk(repo / "AGENTS.delta.db", cid, root=repo)
    assert report.layer == "delta"
    got = {str(s.ref): s for s in report.sources}
    assert got["docs/guide.md:2"].text == "Requests to /billing MUST include the X-Account header."
    assert "past the end" in got["docs/guide.md:9"].note
    assert "no such file" in got["docs/missing.md:1"].note
    assert "outside the root" in got["../outside.md:1"].note and got["../outside.md:1"].text is None
    base_src = got["1"]
    assert base_src.found and base_src.layer == "base" and base_src.chunk is not None
    assert base_src.sources[0].ref == "docs/guide.md:1" and base_src.sources[0].text == "# Guide"


def test_accepted_copy_points_back_to_its_delta_original(repo: Path) -> None:
    ls = LayerSet.from_directory(repo)
    cid, pid = agent_propose(ls, "A promoted fact.", sources=["docs/guide.md:3"])
    [out] = accept(ls, [pid], "fine")
    report = inspect_chunk(repo / "AGENTS.user.db", cid, root=repo)
    first = report.sources[0]
    assert first.ref == cid and first.layer == "delta" and first.chunk is not None
    assert first.chunk.author == "mcp"
    assert first.sources[0].text == "line three"
    assert [n for n, _ in report.versions] == ["user", "delta"]
    assert [(e.kind, e.id) for e in report.events] == [  # the write event names its actor
        ("meta.write", cid + 1), ("meta.proposal_event", pid),
        ("meta.proposal_decision", out.decision_id)]
    assert report.proposals == ((pid, "accepted"),)
    d = report.to_dict()
    assert d["id"] == cid and d["content"] == "A promoted fact."  # plain inspect fields stay
    assert d["provenance"][0]["chunk"]["author"] == "mcp"


def test_a_file_outside_the_set_uses_its_own_events(repo: Path) -> None:
    ls = LayerSet.from_directory(repo)
    cid, pid = agent_propose(ls, "Soon archived.")
    reject(ls, [pid], "nope")
    archive = repo / "old" / "AGENTS.delta.archived.db"
    archive.parent.mkdir()
    shutil.copy(repo / "AGENTS.delta.db", archive)
    (repo / "AGENTS.delta.db").unlink()
    report = inspect_chunk(archive, cid, layerset=LayerSet.from_directory(repo), root=repo)
    assert report.layer is None
    assert [e.data.get("event") for e in report.events] == ["write", "propose", "reject"]
    assert all(e.layer == str(archive) for e in report.events)


def test_missing_chunk_and_depth_limit(repo: Path) -> None:
    ls = LayerSet.from_directory(repo)
    a = agent_write(ls, "Level one.", sources=[1])
    b = agent_write(ls, "Level two.", sources=[a])
    with pytest.raises(NotFoundError, match="no chunk with id 777"):
        inspect_chunk(repo / "AGENTS.delta.db", 777)
    shallow = inspect_chunk(repo / "AGENTS.delta.db", b, root=repo, depth=1)
    assert shallow.sources[0].sources == () and "depth" in shallow.sources[0].note
    deep = inspect_chunk(repo / "AGENTS.delta.db", b, root=repo)
    assert deep.sources[0].sources[0].chunk is not None
    assert deep.sources[0].sources[0].chunk.id == 1

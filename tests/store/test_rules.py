"""The rules of ``sediment.store.rules`` as the services apply them over layer files: one
allocator for written ids, reserved kinds, actors recorded beside the author, and local
notes and memories readable only by their actor on every read path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sediment.embed.hashing import HashEmbedder
from sediment.errors import NotFoundError, ValidationError
from sediment.ingest.compile import CompileOptions, compile_layer
from sediment.memory import MemoryService
from sediment.memory.files import FileMemoryStore
from sediment.ops import SearchOptions, parse
from sediment.ops.propose import propose
from sediment.ops.requests import GetRequest, WriteRequest
from sediment.ops.service import ContextService
from sediment.ops.write import write_context
from sediment.review.decisions import list_proposals
from sediment.review.provenance import inspect_stored
from sediment.store import LayerName, LayerSet, New, NewChunk
from sediment.store.events import WRITE
from sediment.store.ids import WRITTEN_START
from sediment.store.rules import (
    counted_in_statistics,
    memory_owner,
    reserved_kind_problem,
    search_kinds_problem,
    writers,
)

EMB = HashEmbedder()


def _compile(root: Path, *docs: str) -> LayerSet:
    for n, text in enumerate(docs):
        (root / f"doc{n}.md").write_text(text, encoding="utf-8")
    compile_layer(CompileOptions(root=root, include=["*.md"], out=root / "AGENTS.db"), EMB)
    return LayerSet.from_directory(root)


def _memories(ls: LayerSet, tmp_path: Path) -> MemoryService:
    store = FileMemoryStore(ls, tmp_path / "data", profile=EMB.profile.to_dict(),
                            dim=EMB.profile.dim)
    return MemoryService(store, EMB)


def _write(ls: LayerSet, text: str, actor: str, scope: str = "local") -> int:
    return write_context(ls, EMB, parse(WriteRequest, {
        "content": text, "kind": "note", "confidence": 0.6, "scope": scope}), actor=actor)


def _ids(svc: ContextService, query: str, actor: str | None) -> list[int]:
    out = svc.search(parse(SearchOptions, {"query": query, "k": 10}), actor)
    return [r["id"] for r in out["results"]]


def test_a_project_memory_never_takes_a_compiled_id(tmp_path: Path) -> None:
    """Issue 25, defect 1: a project memory's id came from the compiled range, the next
    compile gave a new document the same id, and search showed the private memory."""
    root = tmp_path / "project"
    root.mkdir()
    ls = _compile(root, "# Deploys\n\nDeploys run from the release branch.\n")
    saved = _memories(ls, tmp_path).save(
        "alice", "Alice's private note: the vault code is in the blue binder", "fact",
        None, "project")
    memory_id = int(saved["chunk_id"])
    assert memory_id >= WRITTEN_START
    ls = _compile(root, "# Deploys\n\nDeploys run from the release branch.\n",
                  "# Binder\n\nThe blue binder holds the on-call rota.\n")
    svc = ContextService(ls, EMB, root=root, rerankers=())
    results = svc.search(parse(SearchOptions, {"query": "blue binder", "k": 10}), None)["results"]
    assert results, "the second document must be found"
    assert all("private note" not in r["content"] for r in results)
    assert any("on-call rota" in r["content"] for r in results)


def test_memory_kinds_are_reserved_for_agent_writes() -> None:
    """Defect 2: a write with kind memory.instruction.alice forged alice's memory."""
    assert reserved_kind_problem("memory.instruction.alice")
    assert reserved_kind_problem("meta.proposal_event")
    assert reserved_kind_problem("note") is None
    with pytest.raises(ValidationError, match="memory"):
        parse(WriteRequest, {"content": "x", "kind": "memory.instruction.alice",
                             "confidence": 1.0})


def test_a_memory_cannot_be_proposed_nor_cited(tmp_path: Path) -> None:
    """Defect 3: proposing a memory's id copied it to delta for every reviewer to read;
    citing it as a source showed its content in the queue."""
    root = tmp_path / "project"
    root.mkdir()
    ls = _compile(root, "# Base\n\nSomething compiled.\n")
    saved = _memories(ls, tmp_path).save(
        "alice", "Alice keeps the spare key under the mat", "fact", None, "project")
    mid = int(saved["chunk_id"])
    with pytest.raises((ValidationError, NotFoundError)):
        propose(ls, mid, actor="mallory")
    with pytest.raises((ValidationError, NotFoundError)):
        propose(ls, mid, actor="alice")
    assert ls.layer(LayerName.DELTA) is None or all(
        c.id != mid for c, _ in ls.chunks(LayerName.DELTA))
    with pytest.raises(ValidationError, match="does not exist"):
        write_context(ls, EMB, parse(WriteRequest, {
            "content": "see the source", "kind": "note", "confidence": 0.5,
            "sources": [mid], "scope": "delta"}), actor="mallory")


def test_a_source_chunk_the_viewer_may_not_read_is_not_shown(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    ls = _compile(root, "# Base\n\nSomething compiled.\n")
    secret = _write(ls, "bob's scratch note: the staging password rotates Monday", "bob")
    cited = write_context(ls, EMB, parse(WriteRequest, {
        "content": "a finding", "kind": "note", "confidence": 0.5, "sources": [secret],
        "scope": "delta"}), actor="bob")
    report = inspect_stored(ls, LayerName.DELTA, cited, viewer="carol")
    [src] = report.sources
    assert not src.found and src.chunk is None and src.note == "not in any layer you may read"
    own = inspect_stored(ls, LayerName.DELTA, cited, viewer="bob")
    assert own.sources[0].found and own.sources[0].chunk is not None


def test_local_notes_are_readable_only_by_their_actor(tmp_path: Path) -> None:
    """Defect 7's rule: a local note belongs to the actor who wrote it, on every path."""
    root = tmp_path / "project"
    root.mkdir()
    ls = _compile(root, "# Base\n\nThe build uses make.\n")
    note = _write(ls, "my scratch: kafka broker three is flaky", "alice")
    svc = ContextService(ls, EMB, root=root, rerankers=())
    assert note in _ids(svc, "kafka broker flaky", "alice")
    assert note not in _ids(svc, "kafka broker flaky", "bob")
    assert note in _ids(svc, "kafka broker flaky", None)  # the machine's owner
    assert svc.read_chunk(note, None, "alice")["id"] == note
    with pytest.raises(NotFoundError):
        svc.read_chunk(note, None, "bob")
    with pytest.raises(NotFoundError):
        svc.read_chunk(note, "local", "bob")
    with pytest.raises(NotFoundError):
        propose(ls, note, actor="bob")
    [write] = [e for e in ls.events() if e.kind == WRITE and e.layer is LayerName.LOCAL]
    assert ls.private_ids("bob") == {note, write.chunk.id}  # and the event naming it
    assert ls.private_ids("alice") == set()
    assert ls.private_ids(None) == set()


def test_a_proposed_local_note_is_no_longer_private(tmp_path: Path) -> None:
    """A local note its actor proposed was copied to delta, where the queue shows it to
    everyone: every reader finds it (search, read_chunk, get), its writer's other notes
    stay theirs. Its id was hidden as private, which hid the delta copy too."""
    root = tmp_path / "project"
    root.mkdir()
    ls = _compile(root, "# Base\n\nThe build uses make.\n")
    shared = _write(ls, "the kafka broker three needs a restart weekly", "alice")
    mine = _write(ls, "my scratch: the zookeeper quorum is flaky", "alice")
    propose(ls, shared, actor="alice")
    svc = ContextService(ls, EMB, root=root, rerankers=())
    assert shared in _ids(svc, "kafka broker restart", "bob")
    assert svc.read_chunk(shared, None, "bob")["id"] == shared
    assert svc.get(parse(GetRequest, {"id": shared}), "bob")["id"] == shared
    assert mine not in _ids(svc, "zookeeper quorum flaky", "bob")
    assert shared not in ls.private_ids("bob")
    assert mine in ls.private_ids("bob")


def test_statistics_leave_out_every_event_and_memory() -> None:
    """Defect 8's rule: no event (the meta.supersede of a memory correction among them)
    and no memory counts in a general search's BM25 statistics; every other kind does."""
    for kind in ("meta.supersede", "meta.forget", "meta.write", "meta.proposal_event",
                 "meta.memory", "memory.fact.alice"):
        assert not counted_in_statistics(kind), kind
    for kind in ("note", "canonical", "memo", "metadata"):
        assert counted_in_statistics(kind), kind


def test_a_search_may_not_name_a_memory_kind() -> None:
    assert search_kinds_problem(["note", "meta.write"]) is None
    problem = search_kinds_problem(["note", "memory.fact.alice", "memory.fact.alice"])
    assert problem is not None and problem.startswith("memory.fact.alice: memories are")


def test_the_actor_is_recorded_beside_the_author(tmp_path: Path) -> None:
    """Defect 6: every write, proposal and decision showed only 'Author mcp'."""
    root = tmp_path / "project"
    root.mkdir()
    ls = _compile(root, "# Base\n\nThe build uses make.\n")
    cid = _write(ls, "the linter runs in CI only", "alice", scope="delta")
    assert ls.get(cid)[1].author == "mcp"  # type: ignore[index]
    assert writers(ls.events())[cid] == "alice"
    propose(ls, cid, actor="alice")
    [view] = list_proposals(ls)
    assert view.actor == "alice" and view.to_dict()["actor"] == "alice"
    report = inspect_stored(ls, LayerName.DELTA, cid, viewer=None)
    assert report.actor == "alice" and report.to_dict()["actor"] == "alice"
    assert {e.actor for e in report.events} == {"alice"}


def test_placeholders_resolve_to_the_ids_of_the_same_commit(tmp_path: Path) -> None:
    ls = LayerSet.from_directory(tmp_path)
    items = [NewChunk("note", "first", "mcp", 0.5),
             NewChunk("note", "second", "mcp", 0.5, (New(0),)),
             NewChunk("meta.write", "", "mcp", 1.0, (New(0), New(1)),
                      data={"event": "write", "actor": "alice", "ids": [New(0), New(1)]})]
    ids = ls.append(LayerName.LOCAL, items, np.zeros((3, 4), np.float32), profile=None)
    assert ids[0] >= WRITTEN_START and ids == list(range(ids[0], ids[0] + 3))
    assert ls.chunk(LayerName.LOCAL, ids[1]).sources == (ids[0],)  # type: ignore[union-attr]
    event = ls.chunk(LayerName.LOCAL, ids[2])
    assert event is not None and event.sources == (ids[0], ids[1])
    assert f'"ids":[{ids[0]},{ids[1]}]' in event.content


def test_memory_owner_reads_the_kind() -> None:
    assert memory_owner("memory.fact.alice") == "alice"
    assert memory_owner("memory.fact.al.ice") == "al.ice"
    assert memory_owner("memory.fact") is None
    assert memory_owner("note") is None

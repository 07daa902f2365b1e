"""Layer sets: precedence, schema checks, id allocation, atomic locked appends."""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path

import numpy as np
import pytest

from sediment.errors import (
    LockTimeoutError,
    PermissionDeniedError,
    SchemaMismatchError,
    ValidationError,
)
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.store import HUMAN_WRITABLE, LayerName, LayerSet, NewChunk
from sediment.store.ids import WRITTEN_START

W = WRITTEN_START

PROFILE = {"backend": "hash", "model": "m", "revision": "1", "dim": 4, "output_norm": "l2"}


def vec(n: int, dim: int = 4, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def write_base(directory: Path, n: int = 3, *, dim: int = 4, etype: str = "f32",
               profile: dict[str, object] | None = PROFILE) -> Path:
    chunks = [Chunk(i, "canonical", f"base chunk {i}", "human", 1.0, 0, (f"a.md:{i}",))
              for i in range(1, n + 1)]
    md = {"v": 1, "embedding_profile": profile} if profile else None
    p = directory / "AGENTS.db"
    p.write_bytes(encode_layer(chunks, vec(n, dim), element_type=etype, metadata=md))
    return p


def note(text: str, **kw: object) -> NewChunk:
    return NewChunk(kind="note", content=text, author="mcp", confidence=0.5, **kw)  # type: ignore[arg-type]


def test_directory_with_absent_layers(tmp_path: Path) -> None:
    ls = LayerSet.from_directory(tmp_path)
    assert ls.layers() == [] and ls.schema() is None
    write_base(tmp_path)
    assert [la.name for la in ls.layers()] == [LayerName.BASE]


def test_append_allocates_fresh_ids_and_is_one_commit(tmp_path: Path) -> None:
    base = write_base(tmp_path)
    before = base.read_bytes()
    ls = LayerSet.from_directory(tmp_path)
    ids = ls.append(LayerName.LOCAL, [note("a"), note("b")], vec(2, seed=1), profile=PROFILE)
    assert ids == [W, W + 1]
    ids2 = ls.append(LayerName.DELTA, [note("c")], vec(1, seed=2), profile=PROFILE)
    assert ids2 == [W + 2]
    assert base.read_bytes() == before
    local = LayerFile.open(tmp_path / "AGENTS.local.db")
    assert [c.content for c in local.chunks()] == ["a", "b"]
    assert local.metadata and local.metadata["id_high_water"] == W + 1
    assert local.validate() == []
    assert [la.name for la in ls.layers()] == [LayerName.LOCAL, LayerName.DELTA, LayerName.BASE]


def test_ids_are_never_reused_after_a_layer_is_reset(tmp_path: Path) -> None:
    write_base(tmp_path)
    ls = LayerSet.from_directory(tmp_path)
    ls.append(LayerName.DELTA, [note("x")], vec(1), profile=PROFILE)
    ls.append(LayerName.LOCAL, [note("y")], vec(1), profile=PROFILE)  # high water W + 1
    (tmp_path / "AGENTS.delta.db").unlink()
    assert ls.append(LayerName.DELTA, [note("z")], vec(1), profile=PROFILE) == [W + 2]


def test_base_is_never_writable(tmp_path: Path) -> None:
    write_base(tmp_path)
    ls = LayerSet.from_directory(tmp_path)
    for allowed in [(LayerName.LOCAL, LayerName.DELTA), HUMAN_WRITABLE, tuple(LayerName)]:
        with pytest.raises(PermissionDeniedError, match="immutable"):
            ls.append(LayerName.BASE, [note("x")], vec(1), profile=PROFILE, allowed=allowed)


def test_user_layer_needs_explicit_permission(tmp_path: Path) -> None:
    ls = LayerSet.from_directory(tmp_path)
    with pytest.raises(PermissionDeniedError, match="user"):
        ls.append(LayerName.USER, [note("x")], vec(1), profile=PROFILE)
    assert ls.append(LayerName.USER, [note("x")], vec(1), profile=PROFILE,
                     allowed=HUMAN_WRITABLE) == [W]


def test_explicit_id_override_goes_to_a_higher_layer(tmp_path: Path) -> None:
    write_base(tmp_path)
    ls = LayerSet.from_directory(tmp_path)
    ls.append(LayerName.LOCAL, [note("override of 2", id=2)], vec(1), profile=PROFILE)
    versions = ls.versions(2)
    assert [n for n, _ in versions] == [LayerName.LOCAL, LayerName.BASE]
    with pytest.raises(ValidationError, match="already exists"):
        ls.append(LayerName.LOCAL, [note("again", id=2)], vec(1), profile=PROFILE)


def test_schema_mismatch_names_both_layers(tmp_path: Path) -> None:
    write_base(tmp_path, dim=4)
    other = tmp_path / "other"
    other.mkdir()
    write_base(other, dim=8, profile=None)
    (other / "AGENTS.db").rename(tmp_path / "AGENTS.user.db")
    ls = LayerSet.from_directory(tmp_path)
    with pytest.raises(SchemaMismatchError, match=r"user \(8 dims.*base \(4 dims"):
        ls.schema()


def test_profile_mismatch_is_an_error(tmp_path: Path) -> None:
    write_base(tmp_path)
    ls = LayerSet.from_directory(tmp_path)
    other = dict(PROFILE, model="different")
    with pytest.raises(SchemaMismatchError, match="model"):
        ls.append(LayerName.LOCAL, [note("x")], vec(1), profile=other)
    with pytest.raises(SchemaMismatchError, match="dims"):
        ls.append(LayerName.LOCAL, [note("x")], vec(1, dim=8), profile=PROFILE)


def test_i8_layer_appends_stay_i8(tmp_path: Path) -> None:
    write_base(tmp_path, etype="i8")
    ls = LayerSet.from_directory(tmp_path)
    ls.append(LayerName.LOCAL, [note("x")], vec(1), profile=PROFILE)
    local = LayerFile.open(tmp_path / "AGENTS.local.db")
    assert local.element_type == "i8"
    ls.append(LayerName.LOCAL, [note("y")], vec(1, seed=3), profile=PROFILE)
    local = LayerFile.open(tmp_path / "AGENTS.local.db")
    assert local.chunk_count == 2 and local.validate() == []
    assert np.allclose(local.vector(1), vec(1, seed=3)[0], atol=local.quant_scale)


def test_reader_snapshot_survives_a_commit(tmp_path: Path) -> None:
    write_base(tmp_path)
    ls = LayerSet.from_directory(tmp_path)
    ls.append(LayerName.LOCAL, [note("first")], vec(1), profile=PROFILE)
    snapshot = LayerFile.open(tmp_path / "AGENTS.local.db")
    ls.append(LayerName.LOCAL, [note("second")], vec(1), profile=PROFILE)
    assert [c.content for c in snapshot.chunks()] == ["first"]
    assert [c.content for c in LayerFile.open(tmp_path / "AGENTS.local.db").chunks()] == [
        "first", "second"]


def test_another_process_commit_is_seen(tmp_path: Path) -> None:
    write_base(tmp_path)
    reader = LayerSet.from_directory(tmp_path)
    writer = LayerSet.from_directory(tmp_path)
    assert reader.layer(LayerName.LOCAL) is None
    writer.append(LayerName.LOCAL, [note("new")], vec(1), profile=PROFILE)
    layer = reader.layer(LayerName.LOCAL)
    assert layer is not None and layer.file.chunk_count == 1


def test_lock_timeout_is_a_clear_error(tmp_path: Path) -> None:
    from filelock import FileLock

    write_base(tmp_path)
    ls = LayerSet.from_directory(tmp_path, lock_timeout=0.2)
    with FileLock(str(tmp_path / ".sediment.lock")), \
            pytest.raises(LockTimeoutError, match="held the lock"):
        ls.append(LayerName.LOCAL, [note("x")], vec(1), profile=PROFILE)
    assert not (tmp_path / "AGENTS.local.db").exists()


def _writer(directory: str, worker: int, count: int) -> None:
    ls = LayerSet.from_directory(directory)
    target = LayerName.LOCAL if worker % 2 == 0 else LayerName.DELTA
    for i in range(count):
        ls.append(target, [note(f"w{worker}-{i}")], vec(1, seed=i), profile=PROFILE)


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    write_base(tmp_path)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, 25)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    ls = LayerSet.from_directory(tmp_path)
    contents: list[str] = []
    ids: list[int] = []
    for layer in ls.layers([LayerName.LOCAL, LayerName.DELTA]):
        assert layer.file.validate() == []
        for c in layer.file.chunks():
            contents.append(c.content)
            ids.append(c.id)
    assert sorted(contents) == sorted(f"w{w}-{i}" for w in range(4) for i in range(25))
    assert len(set(ids)) == len(ids) == 100 and min(ids) == W
    leftovers = [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert leftovers == []


def _proposer(directory: str, chunk_id: int, out: object) -> None:
    from sediment.ops.propose import propose

    result = propose(LayerSet.from_directory(directory), chunk_id, actor="tester")
    out.put(result.proposal_id)  # type: ignore[attr-defined]


def test_concurrent_proposals_of_one_chunk_record_one(tmp_path: Path) -> None:
    """The pending check and the append share one lock (LayerSet.transaction)."""
    write_base(tmp_path)
    ls = LayerSet.from_directory(tmp_path)
    (cid,) = ls.append(LayerName.DELTA, [note("worth keeping")], vec(1), profile=PROFILE)
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=_proposer, args=(str(tmp_path), cid, results))
             for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    ids = {results.get(timeout=10) for _ in procs}
    assert len(ids) == 1
    from sediment.store.events import PROPOSAL

    assert sum(1 for e in ls.events() if e.kind == PROPOSAL) == 1


def test_transaction_nests_and_blocks_other_writers(tmp_path: Path) -> None:
    write_base(tmp_path)
    ls = LayerSet.from_directory(tmp_path)
    other = LayerSet.from_directory(tmp_path, lock_timeout=0.2)
    with ls.transaction(), ls.transaction():
        ls.append(LayerName.LOCAL, [note("inside")], vec(1), profile=PROFILE)
        with pytest.raises(LockTimeoutError):
            other.append(LayerName.DELTA, [note("blocked")], vec(1), profile=PROFILE)
    assert other.append(LayerName.DELTA, [note("after")], vec(1), profile=PROFILE) == [W + 1]


def test_one_directory_named_two_ways_is_one_lock(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative user path and an absolute delta path in one directory used to take the
    directory's lock twice and wait on itself until the timeout."""
    monkeypatch.chdir(tmp_path)
    ls = LayerSet({LayerName.USER: Path("AGENTS.user.db"),
                   LayerName.DELTA: tmp_path / "AGENTS.delta.db"}, lock_timeout=2)
    assert len(ls._lock_paths()) == 1
    with ls.transaction():
        pass


def test_events_with_zero_vectors_share_one_row_and_notes_are_still_found(
        tmp_path: Path) -> None:
    """An event per write used to add a zero row per event: the store doubled in size."""
    from sediment.search import SearchRequest, search

    write_base(tmp_path)
    ls = LayerSet.from_directory(tmp_path)
    zero = np.zeros((1, 4), dtype=np.float32)
    v = vec(2, seed=5)
    for i in range(2):
        (nid,) = ls.append(LayerName.LOCAL, [note(f"note {i}")], v[i:i + 1], profile=PROFILE)
        ls.append(LayerName.LOCAL, [NewChunk("meta.test", f'{{"n": {i}}}', "mcp", 1.0, (nid,))],
                  zero, profile=PROFILE)
    f = LayerFile.open(tmp_path / "AGENTS.local.db")
    assert f.validate() == []
    assert (f.chunk_count, f.embedding_info.rows) == (4, 3)
    assert len(set(f.rows.tolist())) == 3
    assert not f.vector(1).any() and not f.vector(3).any()
    assert np.allclose(f.vector(2), v[1])
    hits = search(ls, SearchRequest(k=1, mode="vector", layers=(LayerName.LOCAL,)), v[1],
                  normalised=True).hits
    assert [h.chunk.content for h in hits] == ["note 1"]

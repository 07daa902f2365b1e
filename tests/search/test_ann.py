"""The approximate path: recall against exact, rebuilds, broken index files, filters."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from sediment.format import Chunk, encode_layer
from sediment.search import SearchRequest, ann, search
from sediment.store import LayerName, LayerSet, NewChunk

N, DIM = 3000, 32
PROFILE = {"backend": "test", "model": "clusters", "revision": "1", "dim": DIM,
           "output_norm": "l2"}


def clustered(n: int, seed: int) -> npt.NDArray[np.float32]:
    """Unit vectors around 30 centres: neighbourhoods an HNSW graph can navigate."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(0).standard_normal((30, DIM)).astype(np.float32)
    x = centres[rng.integers(0, 30, n)] + 0.5 * rng.standard_normal((n, DIM)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(autouse=True)
def _low_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann.index, "ANN_MIN_ROWS", 1000)


def make_layer(tmp_path: Path) -> tuple[LayerSet, Path]:
    kinds = ["rare" if i % 100 == 0 else "note" for i in range(N)]
    chunks = [Chunk(i + 1, kinds[i], f"chunk {i}", "human", 1.0, 0) for i in range(N)]
    path = tmp_path / "AGENTS.db"
    path.write_bytes(encode_layer(chunks, clustered(N, 1), metadata={
        "v": 1, "embedding_profile": PROFILE}))
    return LayerSet.from_directory(tmp_path), path


def ids(ls: LayerSet, q: npt.NDArray[np.float32], **kw: object) -> tuple[list[int], bool]:
    res = search(ls, SearchRequest(k=10, mode="vector", **kw), q,  # type: ignore[arg-type]
                 normalised=True)
    return [h.chunk.id for h in res.hits], any(h.approximate for h in res.hits)


def test_recall_against_exact(tmp_path: Path) -> None:
    ls, path = make_layer(tmp_path)
    built = ann.ensure_index(path)
    assert built is not None and built.parent == tmp_path and built.name.startswith(".AGENTS.db.")
    found = total = 0
    for q in clustered(30, 7):
        got, approximate = ids(ls, q)
        want, exact_flag = ids(ls, q, exact=True)
        assert approximate and not exact_flag
        found += len(set(got) & set(want))
        total += len(want)
    assert found / total >= 0.95


def test_small_layers_and_exact_requests_scan(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    ls, path = make_layer(tmp_path)
    ann.ensure_index(path)
    q = clustered(1, 9)[0]
    assert ids(ls, q)[1]
    assert not ids(ls, q, exact=True)[1]
    monkeypatch.setattr(ann.index, "ANN_MIN_ROWS", N + 1)
    fresh = LayerSet.from_directory(tmp_path)
    assert not ids(fresh, q)[1]
    assert ann.ensure_index(path) is None


def test_a_changed_layer_ignores_its_old_index_until_rebuilt(tmp_path: Path) -> None:
    ls, path = make_layer(tmp_path)
    base = ls.layer(LayerName.BASE)
    assert base is not None
    old = ann.ensure_index(path)
    assert old is not None
    # A new version of the layer: same rows but one chunk's content differs.
    chunks = list(base.file.chunks())
    chunks[5] = Chunk(6, "note", "changed", "human", 1.0, 0)
    path.write_bytes(encode_layer(chunks, np.asarray(base.file.embeddings), metadata={
        "v": 1, "embedding_profile": PROFILE}))
    ls2 = LayerSet.from_directory(tmp_path)
    q = clustered(1, 3)[0]
    assert not ids(ls2, q)[1]  # the old index no longer matches: exact scan
    new = ann.ensure_index(path)
    assert new is not None and new != old and not old.exists()
    assert ids(LayerSet.from_directory(tmp_path), q)[1]


def test_appends_change_the_key(tmp_path: Path) -> None:
    from sediment.format import LayerFile

    ls, _ = make_layer(tmp_path)
    local = tmp_path / "AGENTS.local.db"
    v = clustered(1, 4)
    ls.append(LayerName.LOCAL, [NewChunk("note", "x", "mcp", 0.5)], v, profile=PROFILE)
    first = ann.content_key(LayerFile.open(local))
    assert first == ann.content_key(LayerFile.open(local))  # deterministic
    ls.append(LayerName.LOCAL, [NewChunk("note", "y", "mcp", 0.5)], v, profile=PROFILE)
    assert ann.content_key(LayerFile.open(local)) != first


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_broken_index_falls_back_to_exact(tmp_path: Path, damage: str,
                                            caplog: pytest.LogCaptureFixture) -> None:
    ls, path = make_layer(tmp_path)
    built = ann.ensure_index(path)
    assert built is not None
    data = built.read_bytes()
    broken = {"garbage": bytes(reversed(data)), "truncated": data[: len(data) // 2],
              "empty": b""}[damage]
    built.write_bytes(broken)
    q = clustered(1, 5)[0]
    with caplog.at_level(logging.WARNING):
        got, approximate = ids(LayerSet.from_directory(tmp_path), q)
    assert not approximate
    assert got == ids(ls, q, exact=True)[0]
    assert "searching exactly" in caplog.text


def test_a_missing_index_is_an_exact_scan(tmp_path: Path) -> None:
    ls, _ = make_layer(tmp_path)
    q = clustered(1, 6)[0]
    got, approximate = ids(ls, q)
    assert not approximate and got == ids(ls, q, exact=True)[0]


def test_filters_are_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ls, path = make_layer(tmp_path)
    ann.ensure_index(path)
    q = clustered(1, 8)[0]
    res = search(ls, SearchRequest(k=10, mode="vector", kinds=("note",)), q, normalised=True)
    assert res.hits and all(h.chunk.kind == "note" for h in res.hits)
    assert all(h.approximate for h in res.hits)
    # 1% of chunks are "rare": over-fetching would need more than MAX_FETCH, so exact.
    monkeypatch.setattr(ann, "MAX_FETCH", 500)
    rare = search(ls, SearchRequest(k=10, mode="vector", kinds=("rare",)), q, normalised=True)
    exact = search(ls, SearchRequest(k=10, mode="vector", kinds=("rare",), exact=True), q,
                   normalised=True)
    assert [h.chunk.id for h in rare.hits] == [h.chunk.id for h in exact.hits]
    assert len(rare.hits) == 10 and all(h.chunk.kind == "rare" for h in rare.hits)
    assert not any(h.approximate for h in rare.hits)


def test_hybrid_uses_the_index_and_scores_exactly(tmp_path: Path) -> None:
    ls, path = make_layer(tmp_path)
    ann.ensure_index(path)
    q = clustered(1, 2)[0]
    res = search(ls, SearchRequest(text="chunk 17", k=5), q, normalised=True)
    ex = search(ls, SearchRequest(text="chunk 17", k=5, exact=True), q, normalised=True)
    assert res.hits[0].approximate
    by_id = {h.chunk.id: h.vector_score for h in ex.hits}
    for h in res.hits:
        if h.chunk.id in by_id:
            assert h.vector_score == pytest.approx(by_id[h.chunk.id], abs=1e-6)

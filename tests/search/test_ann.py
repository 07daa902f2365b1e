"""The approximate path: recall against exact, rebuilds, broken index files, filters."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from sediment.format import Chunk, LayerFile, encode_layer
from sediment.search import SearchRequest, ann, search
from sediment.search.hits import ChunkAt
from sediment.search.layer_index import layer_index
from sediment.store import LayerName, LayerSet, NewChunk

N, DIM = 3000, 32
PROFILE = {"backend": "test", "model": "clusters", "revision": "1", "dim": DIM,
           "output_norm": "l2"}


def clustered(n: int, seed: int) -> npt.NDArray[np.float32]:
    """Unit vectors around 30 centres: neighbourhoods an approximate index can find."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(0).standard_normal((30, DIM)).astype(np.float32)
    x = centres[rng.integers(0, 30, n)] + 0.5 * rng.standard_normal((n, DIM)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(autouse=True)
def _low_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small layers get an index, opened from the first query (no exact scans first)."""
    monkeypatch.setattr(ann.index, "ANN_MIN_ROWS", 1000)
    monkeypatch.setattr(ann.index, "OPEN_RENT", 0.0)


def make_layer(tmp_path: Path, name: str = "AGENTS.db") -> tuple[LayerSet, Path]:
    kinds = ["rare" if i % 100 == 0 else "note" for i in range(N)]
    chunks = [Chunk(i + 1, kinds[i], f"chunk {i}", "human", 1.0, 0) for i in range(N)]
    path = tmp_path / name
    path.write_bytes(encode_layer(chunks, clustered(N, 1), metadata={
        "v": 1, "embedding_profile": PROFILE}))
    return LayerSet.from_directory(tmp_path), path


def ids(ls: LayerSet, q: npt.NDArray[np.float32], **kw: object) -> tuple[list[int], bool]:
    res = search(ls, SearchRequest(k=10, mode="vector", **kw), q,  # type: ignore[arg-type]
                 normalised=True)
    return [h.chunk.id for h in res.hits], any(h.approximate for h in res.hits)


def test_recall_against_exact(tmp_path: Path) -> None:
    ls, path = make_layer(tmp_path)
    path.chmod(0o640)
    built = ann.ensure_index(path)
    assert built is not None and built.parent == tmp_path and built.name.startswith(".AGENTS.db.")
    assert built.name.endswith(f".{N}.ip.faiss") and built.stat().st_mode & 0o777 == 0o640
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


def test_rewording_keeps_the_index_and_new_vectors_retire_it(tmp_path: Path) -> None:
    ls, path = make_layer(tmp_path)
    base = ls.layer(LayerName.BASE)
    assert base is not None
    old = ann.ensure_index(path)
    assert old is not None
    chunks = list(base.file.chunks())
    vectors = np.array(base.file.embeddings)
    q = clustered(1, 3)[0]
    # Same rows, one chunk reworded: the index maps rows to vectors, so it still holds.
    chunks[5] = Chunk(6, "note", "changed", "human", 1.0, 0)
    path.write_bytes(encode_layer(chunks, vectors, metadata={
        "v": 1, "embedding_profile": PROFILE}))
    assert ids(LayerSet.from_directory(tmp_path), q)[1]
    assert ann.ensure_index(path) == old
    # One vector changed: the index no longer matches and search scans exactly.
    vectors[7] = clustered(1, 11)[0]
    path.write_bytes(encode_layer(chunks, vectors, metadata={
        "v": 1, "embedding_profile": PROFILE}))
    assert not ids(LayerSet.from_directory(tmp_path), q)[1]
    new = ann.ensure_index(path)
    assert new is not None and new != old and not old.exists()
    assert ids(LayerSet.from_directory(tmp_path), q)[1]


def test_an_append_keeps_the_index_for_old_rows_and_scans_new_ones(tmp_path: Path) -> None:
    ls, path = make_layer(tmp_path, "AGENTS.local.db")  # an agent-written layer that grows
    built = ann.ensure_index(path)
    assert built is not None
    before = ann.rows_key(LayerFile.open(path), N)
    q = clustered(1, 12)[0]
    # The appended chunk is the query itself: only the exact scan of the tail can find it.
    ls.append(LayerName.LOCAL, [NewChunk("note", "appended", "mcp", 1.0)], q[None, :],
              profile=PROFILE)
    grown = LayerFile.open(path)
    assert grown.embedding_info.rows == N + 1
    assert ann.rows_key(grown, N) == before != ann.rows_key(grown, N + 1)
    fresh = LayerSet.from_directory(tmp_path)
    res = search(fresh, SearchRequest(k=10, mode="vector"), q, normalised=True)
    assert res.hits[0].chunk.content == "appended" and res.hits[0].approximate
    found, approximate = ids(fresh, q)
    want, _ = ids(fresh, q, exact=True)
    assert approximate and len(set(found) & set(want)) >= 9
    # index build extends the old index by the tail instead of starting again.
    extended = ann.ensure_index(path)
    assert extended is not None and extended != built and not built.exists()
    index = ann.find_index(LayerFile.open(path))
    assert index is not None and index.rows == N + 1
    res = search(LayerSet.from_directory(tmp_path), SearchRequest(k=1, mode="vector"), q,
                 normalised=True)
    assert res.hits[0].chunk.content == "appended" and res.hits[0].approximate


def test_rows_key_is_deterministic_and_covers_the_rows(tmp_path: Path) -> None:
    _, path = make_layer(tmp_path)
    f = LayerFile.open(path)
    assert ann.rows_key(f, N) == ann.rows_key(LayerFile.open(path), N)
    assert len({ann.rows_key(f, n) for n in (0, 1, N - 1, N)}) == 4
    with pytest.raises(ValueError, match="rows"):
        ann.rows_key(f, N + 1)


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


def test_expansion_trades_time_for_recall_and_is_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sediment.errors import ValidationError

    ls, path = make_layer(tmp_path)
    ann.ensure_index(path)
    queries = clustered(20, 13)

    def recall(ef: int) -> float:
        found = 0
        for q in queries:
            got, approximate = ids(ls, q, ann_expansion=ef)
            assert approximate
            found += len(set(got) & set(ids(ls, q, exact=True)[0]))
        return found / (10 * len(queries))

    assert recall(1) < recall(400) and recall(400) >= 0.95
    asked: list[int | None] = []
    real = ann.AnnIndex.search

    def spy(self: ann.AnnIndex, query: npt.NDArray[np.float32], count: int,
            expansion: int | None = None) -> npt.NDArray[np.int64]:
        asked.append(expansion)
        return real(self, query, count, expansion)

    monkeypatch.setattr(ann.AnnIndex, "search", spy)
    ids(ls, queries[0], ann_expansion=300)
    ids(ls, queries[0])
    assert asked == [300, None]  # the breadth reaches the index; None means its default
    for bad in (0, -3, True, 2.5, ann.MAX_FETCH + 1):
        with pytest.raises(ValidationError, match="ann_expansion"):
            ids(ls, queries[0], ann_expansion=bad)


def test_an_index_of_an_earlier_format_is_ignored_and_cleaned(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An inverted file (the previous format) named by the previous key scheme is never
    opened: search scans exactly, and the next build removes it."""
    import hashlib
    import struct
    import zlib

    import faiss

    ls, path = make_layer(tmp_path)
    f = LayerFile.open(path)
    h = hashlib.blake2b(digest_size=16, person=b"sediment-ann-v3")
    h.update(struct.pack("<IQ8sf", f.dim, N, f.element_type.encode(), f.quant_scale))
    h.update(zlib.crc32(np.asarray(f.embeddings).tobytes()).to_bytes(4, "little"))
    rows = np.asarray(f.embeddings, dtype=np.float32)
    ivf = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(DIM), DIM, 16,
                                        faiss.ScalarQuantizer.QT_8bit,
                                        faiss.METRIC_INNER_PRODUCT)
    ivf.train(rows)
    ivf.add(rows)
    old = ann.index_path(path, h.hexdigest(), N, "ip")
    faiss.write_index(ivf, str(old))
    q = clustered(1, 4)[0]
    with caplog.at_level(logging.WARNING):
        got, approximate = ids(ls, q)
    assert not approximate and got == ids(ls, q, exact=True)[0]
    assert ann.find_index(f) is None and ann.stale_indexes(f) == [old]
    built = ann.ensure_index(path)
    assert built is not None and not old.exists()
    assert ids(LayerSet.from_directory(tmp_path), q)[1]


def test_the_graph_is_built_with_the_documented_settings(tmp_path: Path) -> None:
    import faiss

    _, path = make_layer(tmp_path)
    built = ann.ensure_index(path)
    assert built is not None
    index = faiss.read_index(str(built))
    assert isinstance(index, faiss.IndexHNSWSQ) and index.ntotal == N
    assert index.hnsw.efConstruction == ann.index.BUILD_SEARCH
    assert faiss.vector_to_array(index.hnsw.cum_nneighbor_per_level)[1] == 2 * ann.LINKS


def test_the_single_layer_shortcut_matches_the_general_path(tmp_path: Path) -> None:
    """Vector searches of one layer skip the pool arithmetic; the hits must not change."""
    ls, path = make_layer(tmp_path)
    ann.ensure_index(path)
    compared = 0
    for q in clustered(10, 17):
        for kinds in (None, ("note",)):
            request = SearchRequest(k=10, mode="vector", kinds=kinds)
            short = search(ls, request, q, normalised=True).hits
            general = search(ls, request, q, normalised=True, shortcuts=False).hits
            assert short and all(h.approximate for h in short)
            assert [(h.id, h.chunk, h.score, h.vector_score, h.vector_rank, h.approximate)
                    for h in short] == \
                [(h.id, h.chunk, h.score, h.vector_score, h.vector_rank, h.approximate)
                 for h in general]
            compared += len(short)
    assert compared >= 200


def test_hits_decode_on_first_use_the_version_that_was_searched(tmp_path: Path) -> None:
    """The shortcut's hits carry their chunk undecoded; reading it later, even after the
    layer was replaced on disk, gives what the search saw."""
    ls, path = make_layer(tmp_path)
    ann.ensure_index(path)
    res = search(ls, SearchRequest(k=5, mode="vector"), clustered(1, 21)[0], normalised=True)
    assert len(res.hits) == 5 and all(h.approximate for h in res.hits)
    assert all(isinstance(h._chunk, ChunkAt) for h in res.hits)
    reworded = [Chunk(i + 1, "note", f"reworded {i}", "human", 1.0, 0) for i in range(N)]
    fresh = path.with_name("replacement")
    fresh.write_bytes(encode_layer(reworded, clustered(N, 1), metadata={
        "v": 1, "embedding_profile": PROFILE}))
    os.replace(fresh, path)
    assert [(h.chunk.id, h.chunk.content) for h in res.hits] == \
        [(h.id, f"chunk {h.id - 1}") for h in res.hits]
    assert all(isinstance(h._chunk, Chunk) for h in res.hits)
    assert search(ls, SearchRequest(k=1, mode="vector"), clustered(1, 21)[0],
                  normalised=True).hits[0].chunk.content.startswith("reworded")


def test_a_process_scans_exactly_until_opening_the_index_would_have_paid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann.index, "OPEN_RENT", 1.0)
    ls, path = make_layer(tmp_path)
    built = ann.ensure_index(path)
    assert built is not None
    f = ls.layers()[0].file
    cost, scan = ann.open_cost(f, built.stat().st_size), ann.scan_cost(f)
    scans, paid = 0, 0.0
    while paid < cost:
        paid += scan
        scans += 1
    assert scans > 1
    q = clustered(1, 9)[0]
    flags = [ids(ls, q)[1] for _ in range(scans + 2)]
    assert flags == [False] * scans + [True, True]
    fresh = LayerSet.from_directory(tmp_path)
    assert layer_index(fresh.layers()[0].file).ann_index(now=True) is not None
    assert ids(fresh, q)[1]
    asked = LayerSet.from_directory(tmp_path)
    assert ids(asked, q, ann_expansion=64)[1]  # a breadth asks for the index


def test_a_one_shot_search_does_not_load_faiss(tmp_path: Path) -> None:
    _, path = make_layer(tmp_path)
    assert ann.ensure_index(path) is not None
    script = (
        "import sys\n"
        "import numpy as np\n"
        "from sediment.search import SearchRequest, ann, search\n"
        "from sediment.store import LayerSet\n"
        f"ann.index.ANN_MIN_ROWS = {N // 2}\n"
        f"q = np.ones({DIM}, dtype=np.float32) / np.sqrt({DIM})\n"
        "res = search(LayerSet.from_directory(sys.argv[1]), SearchRequest(k=10, "
        "mode='hybrid', text='chunk 7'), q, normalised=True)\n"
        "print(len(res.hits), any(h.approximate for h in res.hits), 'faiss' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                         text=True, check=True, timeout=120)
    assert out.stdout.split() == ["10", "False", "False"]


def test_the_default_breadth_grows_with_the_graph(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A fixed efSearch of 96 gave recall@10 0.886 at 1M unclustered vectors (0.975 at
    100k): larger graphs search wider unless the request says otherwise."""
    assert ann.default_breadth(N) == ann.default_breadth(100_000) == ann.SEARCH
    assert ann.default_breadth(1_000_000) == 256
    assert ann.default_breadth(500_000) == 192
    monkeypatch.setattr(ann.index, "SEARCH_ROWS", N // 3)  # so that this small graph is "large"
    assert ann.default_breadth(N) > ann.SEARCH
    ls, path = make_layer(tmp_path)
    ann.ensure_index(path)
    asked: list[int] = []
    real = ann.index._search_params

    def spy(breadth: int) -> object:
        asked.append(breadth)
        return real(breadth)

    monkeypatch.setattr(ann.index, "_search_params", spy)
    q = clustered(1, 9)[0]
    assert ids(ls, q)[1] and ids(ls, q, ann_expansion=40)[1]
    assert asked == [ann.default_breadth(N), 40]

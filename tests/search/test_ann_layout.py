"""Index files are walked before FAISS reads them: hostile sizes and links are refused."""

from __future__ import annotations

import logging
import resource
import struct
from pathlib import Path

import faiss
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment.search import ann
from sediment.search.ann.layout import LayoutError, check
from sediment.store import LayerSet
from tests.search.test_ann import N, clustered, ids, make_layer


@pytest.fixture(autouse=True)
def _low_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small layers get an index, opened from the first query (no exact scans first)."""
    monkeypatch.setattr(ann.index, "ANN_MIN_ROWS", 1000)
    monkeypatch.setattr(ann.index, "OPEN_RENT", 0.0)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """One real index, built once; each test damages a copy of its bytes."""
    d = tmp_path_factory.mktemp("layout")
    _, path = make_layer(d)
    index = ann.ensure_index(path, min_rows=1)
    assert index is not None
    return index, index.read_bytes()


def dim() -> int:
    return int(clustered(1, 0).shape[1])


def patched(data: bytes, at: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into("<" + fmt, out, at, value)
    return bytes(out)


def refused(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "damaged.faiss"
    path.write_bytes(data)
    with pytest.raises(LayoutError) as err:
        check(path, N, dim())
    return str(err.value)


def test_a_real_index_passes(built: tuple[Path, bytes]) -> None:
    check(built[0], N, dim())
    with pytest.raises(LayoutError, match="expected 2999"):
        check(built[0], N - 1, dim())


def _graph(path: Path) -> tuple[object, np.ndarray, np.ndarray, np.ndarray]:
    """The index (keep it alive: it owns the graph), its offsets, levels and level sizes."""
    index = faiss.read_index(str(path))
    graph = index.hnsw
    return (index, faiss.vector_to_array(graph.offsets), faiss.vector_to_array(graph.levels),
            faiss.vector_to_array(graph.cum_nneighbor_per_level))


def _links_start(data: bytes, total_links: int) -> int:
    """Byte offset of the first graph link: the links end 20 bytes (entry point, top level
    and three search settings) before the code store's record."""
    return data.index(b"IxSQ") - 20 - 4 * total_links


def test_an_inflated_code_store_is_refused(tmp_path: Path, built: tuple[Path, bytes]) -> None:
    data = built[1]
    codes_len = data.index(b"IxSQ") + 4 + 33 + 4 + 4 + 4 + 16 + 8 + 4 * 2 * dim()
    # 2^34 codes: FAISS alone would allocate and zero 16 GiB here.
    assert "codes" in refused(tmp_path, patched(data, codes_len, "Q", 1 << 34))
    assert "codes" in refused(tmp_path, patched(data, codes_len, "Q", 2**64 - 1))
    msg = refused(tmp_path, patched(data, codes_len, "Q", N * dim() - 1))
    assert "expected" in msg and "at byte" in msg


def test_a_vector_longer_than_the_file_is_refused(tmp_path: Path,
                                                   built: tuple[Path, bytes]) -> None:
    data = built[1]
    links_len = _links_start(data, int(_graph(built[0])[1][-1])) - 8
    msg = refused(tmp_path, patched(data, links_len, "Q", 1 << 40))
    assert "the links declares 1099511627776 items" in msg and "at byte" in msg


def test_a_graph_link_to_no_row_is_refused(tmp_path: Path, built: tuple[Path, bytes]) -> None:
    data = built[1]
    last_link = data.index(b"IxSQ") - 20 - 4
    assert "names no row" in refused(tmp_path, patched(data, last_link, "i", 1 << 20))
    assert "names no row" in refused(tmp_path, patched(data, last_link, "i", -2))


def test_an_upper_link_to_a_row_without_that_level_is_refused(
        tmp_path: Path, built: tuple[Path, bytes]) -> None:
    """FAISS follows the link and reads the target's links at the link's level, which a
    row on level 0 alone does not have: past the end of the table for the last one."""
    path, data = built
    index, offsets, levels, cum = _graph(path)
    graph = index.hnsw  # type: ignore[attr-defined]
    assert graph.max_level >= 1 and levels[-1] == 1
    start = _links_start(data, int(offsets[-1]))
    slot = int(offsets[graph.entry_point] + cum[1])  # the entry point's first level-1 link
    damaged = patched(data, start + 4 * slot, "i", len(levels) - 1)
    assert "not on the link's level" in refused(tmp_path, damaged)
    # The same link to a row that does have level 1 is fine.
    upper = int(np.flatnonzero(levels > 1)[0])
    check_ok = tmp_path / "ok.faiss"
    check_ok.write_bytes(patched(data, start + 4 * slot, "i", upper))
    check(check_ok, N, dim())


def test_a_graph_with_a_node_per_row_missing_is_refused(
        tmp_path: Path, built: tuple[Path, bytes]) -> None:
    data = built[1]
    with pytest.raises(LayoutError, match="3001"):
        check(built[0], N + 1, dim())
    at = data.index(b"IHNs") + 4 + 4  # the index's row count
    assert "expected 3000" in refused(tmp_path, patched(data, at, "q", N - 1))


def test_a_sparse_file_declaring_gigabytes_is_refused_without_reading_them(
        tmp_path: Path, built: tuple[Path, bytes]) -> None:
    """A hole costs no disk, so 'fits in the file' alone does not bound what FAISS
    allocates: every table is also bounded by what such a graph can hold."""
    data = built[1]
    at = data.index(b"IHNs") + 4 + 4 + 8 + 16 + 1 + 4  # the level probabilities' length
    count = struct.unpack_from("<Q", data, at)[0]
    hole = 1 << 31
    path = tmp_path / "sparse.faiss"
    with open(path, "wb") as fh:
        fh.write(patched(data, at, "Q", count + hole)[:at + 8 + 8 * count])
        fh.seek(8 * hole, 1)
        fh.write(data[at + 8 + 8 * count:])
    assert path.stat().st_size > 16 << 30
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(LayoutError, match="levels"):
        check(path, N, dim())
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB


def test_truncated_padded_and_foreign_files_are_refused(tmp_path: Path,
                                                        built: tuple[Path, bytes]) -> None:
    data = built[1]
    assert "bytes" in refused(tmp_path, data[:-1])
    assert "bytes" in refused(tmp_path, data + b"\0")
    assert "expected a 'IHNs' record" in refused(tmp_path, b"IwSq" + data[4:])
    assert "empty" in refused(tmp_path, b"")


def test_search_logs_a_refused_index_and_scans_exactly(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ls, path = make_layer(tmp_path)
    index = ann.ensure_index(path)
    assert index is not None
    data = index.read_bytes()
    # A link past the layer: FAISS reads this file happily and would follow it out of
    # bounds.
    index.write_bytes(patched(data, data.index(b"IxSQ") - 24, "i", N + 7))
    q = clustered(1, 5)[0]
    with caplog.at_level(logging.WARNING):
        got, approximate = ids(LayerSet.from_directory(tmp_path), q)
    assert not approximate and got == ids(ls, q, exact=True)[0]
    assert "names no row" in caplog.text and "searching exactly" in caplog.text


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
                      min_size=1, max_size=4))
def test_damaged_files_are_refused_or_search_safely(
        tmp_path: Path, built: tuple[Path, bytes], flips: list[tuple[float, int]]) -> None:
    """Whatever bytes change, the walk refuses the file or FAISS reads it and a search
    returns only rows of the layer."""
    data = built[1]
    damaged = bytearray(data)
    for where, mask in flips:
        damaged[int(where * len(data))] ^= mask
    target = tmp_path / "flipped.faiss"
    target.write_bytes(bytes(damaged))
    try:
        check(target, N, dim())
    except LayoutError:
        return
    index = ann.AnnIndex.open(target, N, dim(), "ip")
    assert index is not None
    rows = index.search(clustered(1, 3)[0], 20, 8)
    assert len(rows) and np.all((rows >= 0) & (rows < N))

"""Index files are walked before FAISS reads them: hostile sizes, links and ids are refused."""

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

from sediment.format import Chunk, encode_layer
from sediment.search import ann
from sediment.search.ann.layout import LayoutError, check
from sediment.store import LayerSet
from tests.search.test_ann import PROFILE, N, clustered, ids, make_layer


@pytest.fixture(autouse=True)
def _low_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann.index, "ANN_MIN_ROWS", 1000)


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


def test_an_inflated_list_size_is_refused(
        tmp_path: Path, built: tuple[Path, bytes]) -> None:
    data = built[1]
    first_size = data.index(b"ilar") + 4 + 16 + 4 + 8
    # 2^34 rows of 40 bytes: FAISS alone would allocate and zero 640 GiB here.
    assert "list sizes" in refused(tmp_path, patched(data, first_size, "Q", 1 << 34))
    assert "list sizes" in refused(tmp_path, patched(data, first_size, "Q", 2**64 - 1))


def test_a_vector_longer_than_the_file_is_refused(tmp_path: Path,
                                                   built: tuple[Path, bytes]) -> None:
    data = built[1]
    sizes_len = data.index(b"ilar") + 4 + 16 + 4
    msg = refused(tmp_path, patched(data, sizes_len, "Q", 1 << 40))
    assert "the list sizes declares 1099511627776 items" in msg and "at byte" in msg


def test_a_graph_link_to_no_centre_is_refused(tmp_path: Path,
                                              built: tuple[Path, bytes]) -> None:
    data = built[1]
    last_link = data.index(b"IxFI") - 20 - 4
    assert "names no centre" in refused(tmp_path, patched(data, last_link, "i", 1 << 20))


def test_an_upper_link_to_a_centre_without_that_level_is_refused(
        tmp_path: Path, built: tuple[Path, bytes]) -> None:
    """FAISS follows the link and reads the target's links at the link's level, which a
    centre on level 0 alone does not have: past the end of the table for the last one."""
    path, data = built
    ivf = faiss.read_index(str(path))  # owns the quantizer: keep it alive
    graph = faiss.downcast_index(ivf.quantizer).hnsw
    offsets = faiss.vector_to_array(graph.offsets)
    levels = faiss.vector_to_array(graph.levels)
    cum = faiss.vector_to_array(graph.cum_nneighbor_per_level)
    assert graph.max_level >= 1 and levels[-1] == 1
    links_start = data.index(b"IxFI") - 20 - 4 * int(offsets[-1])
    slot = int(offsets[graph.entry_point] + cum[1])  # the entry point's first level-1 link
    damaged = patched(data, links_start + 4 * slot, "i", len(levels) - 1)
    assert "not on the link's level" in refused(tmp_path, damaged)


def test_a_sparse_file_declaring_gigabytes_is_refused_without_reading_them(
        tmp_path: Path, built: tuple[Path, bytes]) -> None:
    """A hole costs no disk, so 'fits in the file' alone does not bound what FAISS
    allocates: every table is also bounded by what such a graph can hold."""
    data = built[1]
    at = data.index(b"IHNf") + 4 + 4 + 8 + 16 + 1 + 4  # the level probabilities' length
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


def test_an_index_of_mostly_empty_lists_passes(tmp_path: Path) -> None:
    """FAISS writes list sizes as (list, size) pairs when most lists are empty."""
    few = clustered(12, 4)
    vectors = few[np.arange(N) % len(few)]
    chunks = [Chunk(i + 1, "note", f"chunk {i}", "human", 1.0, 0) for i in range(N)]
    path = tmp_path / "AGENTS.db"
    path.write_bytes(encode_layer(chunks, vectors, metadata={
        "v": 1, "embedding_profile": PROFILE}))
    index = ann.ensure_index(path)
    assert index is not None and b"sprs" in index.read_bytes()
    check(index, N, dim())
    got, approximate = ids(LayerSet.from_directory(tmp_path), few[3])
    assert approximate and got[0] % len(few) == 4


def test_a_row_id_outside_the_layer_is_refused(tmp_path: Path,
                                               built: tuple[Path, bytes]) -> None:
    data = built[1]
    assert "outside" in refused(tmp_path, patched(data, len(data) - 8, "q", N + 7))
    assert "outside" in refused(tmp_path, patched(data, len(data) - 8, "q", -2))


def test_truncated_padded_and_foreign_files_are_refused(tmp_path: Path,
                                                        built: tuple[Path, bytes]) -> None:
    data = built[1]
    assert "bytes" in refused(tmp_path, data[:-1])
    assert "bytes" in refused(tmp_path, data + b"\0")
    assert "expected a 'IwSq' record" in refused(tmp_path, b"IxFI" + data[4:])
    assert "empty" in refused(tmp_path, b"")


def test_search_logs_a_refused_index_and_scans_exactly(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ls, path = make_layer(tmp_path)
    index = ann.ensure_index(path)
    assert index is not None
    data = index.read_bytes()
    # A row id past the layer: FAISS reads this file happily and would hand the engine a
    # row that does not exist.
    index.write_bytes(patched(data, len(data) - 8, "q", N + 7))
    q = clustered(1, 5)[0]
    with caplog.at_level(logging.WARNING):
        got, approximate = ids(LayerSet.from_directory(tmp_path), q)
    assert not approximate and got == ids(ls, q, exact=True)[0]
    assert "outside" in caplog.text and "searching exactly" in caplog.text


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

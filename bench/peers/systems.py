"""One adapter per system and mode: build from the shared vectors, open, search top-10.

Settings are each library's documented way to get exact or HNSW search over inner
product (unit vectors, so inner product = cosine). HNSW everywhere: M = 16, construction
ef = 128. Sediment's approximate index is an HNSW graph over 8-bit codes (FAISS
``IndexHNSWSQ``, the same M and construction ef) whose candidates Sediment re-scores
exactly. Search breadth: the table row uses each system's default (ef 64 for FAISS, Chroma
and LanceDB, their common default; Sediment's own default for Sediment); the sweep opens
each approximate system again at every breadth of ``EFFORTS`` (ef) to compare them at equal
recall.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
Searcher = Callable[[F32], list[int]]
Opener = Callable[[Path, "int | None"], Searcher]
K = 10
M, EF_CONSTRUCTION, EF_SEARCH = 16, 128, 64
EFFORTS = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384)
"""HNSW search breadths (ef) of the sweep."""
PROBES = (4, 8, 12, 16, 24, 32, 64, 96, 128, 256)
"""Lists visited (nprobe) in the sweep of the previous index, the inverted file."""
IVF_DEFAULT_PROBES = 12


@dataclass(frozen=True, slots=True)
class System:
    name: str
    mode: str  # "exact" or "approximate"
    build: Callable[[Path, F32], None]
    open: Opener
    """Open for searching; the int is the search breadth (None: the system's default)."""
    tunable: bool = True
    """Whether its search breadth can be set when opening (for the sweep)."""
    efforts: tuple[int, ...] | None = None
    """The sweep's breadths when they are not HNSW ef values (None: ``EFFORTS``)."""
    breadth: str = "ef"
    """What the breadth is called (for the report)."""

    @property
    def sweeps(self) -> bool:
        return self.mode == "approximate" and self.tunable


# -- Sediment --------------------------------------------------------------------------------
def _sediment_build(element_type: str, ann_index: bool) -> Callable[[Path, F32], None]:
    def build(d: Path, x: F32) -> None:
        from sediment.format import Chunk, encode_layer
        from sediment.search import ann

        profile = {"backend": "bench", "model": "mixture", "revision": "1", "dim": x.shape[1],
                   "output_norm": "l2"}
        chunks = [Chunk(i + 1, "note", f"chunk {i}", "human", 1.0, 0) for i in range(len(x))]
        data = encode_layer(chunks, x, element_type=element_type,
                            metadata={"v": 1, "embedding_profile": profile})
        (d / "AGENTS.db").write_bytes(data)
        if ann_index:
            ann.ensure_index(d / "AGENTS.db", min_rows=1)

    return build


def _sediment_open(exact: bool) -> Opener:
    def open_(d: Path, effort: int | None) -> Searcher:
        from sediment.search import SearchRequest, ann, search
        from sediment.store import LayerSet

        ann.index.ANN_MIN_ROWS = 1  # the benchmark decides per system, not per size
        ann.index.OPEN_RENT = 0.0  # opened on the first query, as a warmed-up server has it
        ls = LayerSet({"base": d / "AGENTS.db"})
        request = SearchRequest(k=K, mode="vector", exact=exact, ann_expansion=effort)

        def run(q: F32) -> list[int]:
            return [h.id - 1 for h in search(ls, request, q, normalised=True).hits]

        return run

    return open_


# -- Sediment's previous index: an inverted file over 8-bit codes ----------------------------
def _ivf_build(d: Path, x: F32) -> None:
    """The index Sediment used before the HNSW graph, built as it was: 4 x sqrt(n) lists
    (a power of two), 8-bit codes, list centres in a small HNSW graph, rows assigned with
    a centre search of breadth 128."""
    import math

    import faiss

    lists = max(1, min(int(2 ** round(math.log2(4 * math.sqrt(len(x))))), len(x) // 39))
    centres = faiss.IndexHNSWFlat(x.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    qt_8bit: object = faiss.ScalarQuantizer.QT_8bit
    index = faiss.IndexIVFScalarQuantizer(centres, x.shape[1], lists, qt_8bit,
                                          faiss.METRIC_INNER_PRODUCT)
    index.train(x[np.linspace(0, len(x) - 1, min(len(x), 262_144)).astype(np.int64)])
    centres.hnsw.efSearch = 128
    index.add(x)
    faiss.write_index(index, str(d / "index.faiss"))
    np.save(d / "vectors.npy", x)


def _ivf_open(d: Path, effort: int | None) -> Searcher:
    """Candidates from the inverted file, the best 20 re-scored exactly (as Sediment's
    engine did)."""
    import faiss

    index = faiss.read_index(str(d / "index.faiss"))
    x = np.load(d / "vectors.npy", mmap_mode="r")
    probes = effort or IVF_DEFAULT_PROBES
    params = faiss.SearchParametersIVF(
        nprobe=probes, quantizer_params=faiss.SearchParametersHNSW(efSearch=max(32, 2 * probes)))

    def run(q: F32) -> list[int]:
        _, ids = index.search(q[None, :], 20, params=params)
        cand = ids[0][ids[0] >= 0]
        scores = x[cand] @ q
        return [int(i) for i in cand[np.argsort(-scores)[:K]]]

    return run


# -- usearch -------------------------------------------------------------------------------
def _usearch_build(d: Path, x: F32) -> None:
    """usearch alone (Sediment's first index library): an int8 graph of rows scaled so the
    largest component is 127, searched and ranked by usearch with no exact re-scoring."""
    from usearch.index import Index

    index = Index(ndim=x.shape[1], metric="ip", dtype="i8", connectivity=M,
                  expansion_add=EF_CONSTRUCTION)
    scale = np.float32(127.0 / float(np.abs(x).max()))
    for start in range(0, len(x), 65536):
        part = np.rint(x[start:start + 65536] * scale).astype(np.int8)
        index.add(np.arange(start, start + len(part), dtype=np.uint64), part)
    index.save(str(d / "index.usearch"))


def _usearch_open(d: Path, effort: int | None) -> Searcher:
    from usearch.index import Index

    index = Index.restore(str(d / "index.usearch"), view=True)
    index.expansion_search = effort or EF_SEARCH

    def run(q: F32) -> list[int]:
        qi = np.rint(q * np.float32(127.0 / float(np.abs(q).max()))).astype(np.int8)
        return [int(k) for k in index.search(qi, K, threads=1).keys]

    return run


# -- FAISS -------------------------------------------------------------------------------------
def _faiss_build(hnsw: bool) -> Callable[[Path, F32], None]:
    def build(d: Path, x: F32) -> None:
        import faiss

        if hnsw:
            index = faiss.IndexHNSWFlat(x.shape[1], M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = EF_CONSTRUCTION
        else:
            index = faiss.IndexFlatIP(x.shape[1])
        index.add(x)
        faiss.write_index(index, str(d / "index.faiss"))

    return build


def _faiss_open(d: Path, effort: int | None) -> Searcher:
    import faiss

    index = faiss.read_index(str(d / "index.faiss"))
    if hasattr(index, "hnsw"):
        index.hnsw.efSearch = effort or EF_SEARCH

    def run(q: F32) -> list[int]:
        _, ids = index.search(q[None, :], K)
        return [int(i) for i in ids[0]]

    return run


# -- LanceDB -----------------------------------------------------------------------------------
def _lance_build(index: bool) -> Callable[[Path, F32], None]:
    def build(d: Path, x: F32) -> None:
        import lancedb
        import pyarrow as pa

        db = lancedb.connect(str(d / "lance"))
        vec = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), x.shape[1])
        table = db.create_table("v", pa.table({"id": pa.array(np.arange(len(x))),
                                               "vector": vec}))
        if index:
            table.create_index(metric="dot", index_type="IVF_HNSW_SQ", m=M,
                               ef_construction=EF_CONSTRUCTION)

    return build


def _lance_open(exact: bool) -> Opener:
    def open_(d: Path, effort: int | None) -> Searcher:
        import lancedb

        table = lancedb.connect(str(d / "lance")).open_table("v")

        def run(q: F32) -> list[int]:
            s = table.search(q).metric("dot").limit(K).select(["id"])
            s = s.bypass_vector_index() if exact else s.ef(effort or EF_SEARCH)
            return [int(i) for i in s.to_arrow()["id"].to_pylist()]

        return run

    return open_


# -- Chroma ------------------------------------------------------------------------------------
def _chroma_build(d: Path, x: F32) -> None:
    import chromadb

    client = chromadb.PersistentClient(path=str(d / "chroma"))
    col = client.create_collection("vectors", metadata={
        "hnsw:space": "ip", "hnsw:M": M, "hnsw:construction_ef": EF_CONSTRUCTION,
        "hnsw:search_ef": EF_SEARCH})
    batch = min(5000, client.get_max_batch_size())
    for start in range(0, len(x), batch):
        stop = min(start + batch, len(x))
        col.add(ids=[str(i) for i in range(start, stop)], embeddings=x[start:stop])


def _chroma_open(d: Path, effort: int | None) -> Searcher:
    import chromadb

    col = chromadb.PersistentClient(path=str(d / "chroma")).get_collection("vectors")

    def run(q: F32) -> list[int]:
        res = col.query(query_embeddings=q[None, :], n_results=K, include=[])
        return [int(i) for i in res["ids"][0]]

    return run


# -- sqlite-vec --------------------------------------------------------------------------------
def _sqlite_connect(path: Path):  # type: ignore[no-untyped-def]
    """apsw, because CPython's sqlite3 is often built without extension loading."""
    import apsw
    import sqlite_vec

    db = apsw.Connection(str(path))
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    db.enable_load_extension(False)
    return db


def _sqlite_build(d: Path, x: F32) -> None:
    db = _sqlite_connect(d / "vec.sqlite")
    db.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{x.shape[1]}] "
               "distance_metric=cosine)")
    for start in range(0, len(x), 10000):
        rows = [(i + 1, x[i].tobytes()) for i in range(start, min(start + 10000, len(x)))]
        with db:
            db.executemany("INSERT INTO v(rowid, embedding) VALUES (?, ?)", rows)
    db.close()


def _sqlite_open(d: Path, effort: int | None) -> Searcher:
    db = _sqlite_connect(d / "vec.sqlite")
    sql = "SELECT rowid FROM v WHERE embedding MATCH ? AND k = ? ORDER BY distance"

    def run(q: F32) -> list[int]:
        return [int(r[0]) - 1 for r in db.execute(sql, (q.astype(np.float32).tobytes(), K))]

    return run


SYSTEMS = {s.name: s for s in [
    System("sediment", "exact", _sediment_build("f32", False), _sediment_open(True)),
    System("sediment-i8", "exact", _sediment_build("i8", False), _sediment_open(True)),
    System("faiss-flat", "exact", _faiss_build(False), _faiss_open),
    System("lancedb", "exact", _lance_build(False), _lance_open(True)),
    System("sqlite-vec", "exact", _sqlite_build, _sqlite_open),
    System("sediment-ann", "approximate", _sediment_build("f32", True), _sediment_open(False)),
    System("ivf-previous", "approximate", _ivf_build, _ivf_open, efforts=PROBES,
           breadth="nprobe"),
    System("faiss-hnsw", "approximate", _faiss_build(True), _faiss_open),
    System("usearch", "approximate", _usearch_build, _usearch_open),
    System("lancedb-hnsw", "approximate", _lance_build(True), _lance_open(False)),
    # Chroma 1.5 records modify(configuration={"hnsw": {"ef_search": ...}}) but its loaded
    # index keeps the build's ef: a sweep gave the same recall at every breadth.
    System("chroma", "approximate", _chroma_build, _chroma_open, tunable=False),
]}

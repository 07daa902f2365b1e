from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sediment.embed import CachedEmbedder, Embedder, EmbeddingCache, HashEmbedder

TEXTS = ["alpha beta", "gamma delta", "epsilon", "alpha beta gamma", ""]

_WORKER = """
import sys
import numpy as np
from sediment.embed import EmbeddingCache
path, worker = sys.argv[1], sys.argv[2]
cache = EmbeddingCache(path)
rng = np.random.default_rng(int(worker))
for round_ in range(40):
    items = {f"{worker}-{round_}-{i}".encode(): rng.random(16, dtype=np.float32) for i in range(25)}
    cache.put_many(items)
    got = cache.get_many(items)
    assert len(got) == len(items), (round_, len(got))
    for k, v in items.items():
        assert np.array_equal(got[k], v)
print("ok")
"""


def test_second_run_makes_no_inner_calls(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "embeddings.sqlite"
    first = CachedEmbedder(HashEmbedder(64), EmbeddingCache(path))
    assert isinstance(first, Embedder)
    v1 = first.embed(TEXTS)
    assert (first.calls, first.hits) == (len(TEXTS), 0)
    first.cache.close()

    second = CachedEmbedder(HashEmbedder(64), EmbeddingCache(path))
    v2 = second.embed(TEXTS)
    second.close()
    assert (second.calls, second.hits) == (0, len(TEXTS))
    assert np.array_equal(v1, v2)
    assert np.array_equal(v1, HashEmbedder(64).embed(TEXTS))
    assert v2.dtype == np.float32 and v2.shape == (len(TEXTS), 64)


def test_partial_hits_and_duplicates(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "c.sqlite") as cache:
        e = CachedEmbedder(HashEmbedder(32), cache)
        e.embed(["a", "b"])
        out = e.embed(["b", "c", "c", "a", "c"])
    assert (e.calls, e.hits) == (3, 2)
    np.testing.assert_array_equal(out, HashEmbedder(32).embed(["b", "c", "c", "a", "c"]))
    assert e.embed([]).shape == (0, 32)
    assert e.profile == HashEmbedder(32).profile
    assert e.metadata() == HashEmbedder(32).metadata()


def test_different_profile_uses_different_keys(tmp_path: Path) -> None:
    small, large = HashEmbedder(8), HashEmbedder(16)
    assert small.profile.cache_key("x") != large.profile.cache_key("x")
    with EmbeddingCache(tmp_path / "c.sqlite") as cache:
        CachedEmbedder(small, cache).embed(["x", "y"])
        other = CachedEmbedder(large, cache)
        assert other.embed(["x", "y"]).shape == (2, 16)
    assert (other.calls, other.hits) == (2, 0)


def test_vectors_are_stored_as_little_endian_float32(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    vec = np.array([1.5, -2.25, 3.0], dtype=np.float32)
    with EmbeddingCache(path) as cache:
        cache.put_many({b"k" * 32: vec})
        got = cache.get_many([b"k" * 32, b"missing"])
    assert list(got) == [b"k" * 32]
    assert got[b"k" * 32].dtype == np.float32
    np.testing.assert_array_equal(got[b"k" * 32], vec)
    with sqlite3.connect(path) as conn:
        dim, blob = conn.execute("SELECT dim, vector FROM embeddings").fetchone()
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    assert dim == 3 and blob == vec.astype("<f4").tobytes()
    assert mode == "wal"


def test_many_keys_beyond_the_parameter_limit(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "c.sqlite") as cache:
        items = [(i.to_bytes(4, "little"), np.full(2, i, dtype=np.float32)) for i in range(2500)]
        cache.put_many(items)
        got = cache.get_many(k for k, _ in items)
    assert len(got) == 2500 and got[(1234).to_bytes(4, "little")][0] == 1234


@pytest.mark.parametrize(
    "garbage",
    [b"this is not a database at all " * 200, b"SQLite format 3\x00" + b"\xff" * 8192],
)
def test_corrupt_file_behaves_as_empty_cache(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, garbage: bytes
) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(garbage)
    cache = EmbeddingCache(path)
    with caplog.at_level(logging.WARNING, logger="sediment.embed.cache"):
        assert cache.get_many([b"a"]) == {}
        cache.put_many({b"a": np.ones(4, dtype=np.float32)})
        assert cache.get_many([b"a"]) == {}
        e = CachedEmbedder(HashEmbedder(16), cache)
        np.testing.assert_array_equal(e.embed(TEXTS), HashEmbedder(16).embed(TEXTS))
        e.embed(TEXTS)
    assert e.calls == 2 * len(TEXTS) and e.hits == 0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "delete the file" in warnings[0].getMessage()
    assert path.read_bytes() == garbage


def test_row_with_wrong_length_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with EmbeddingCache(path) as cache:
        cache.put_many({b"k": np.ones(4, dtype=np.float32)})
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE embeddings SET vector = ?", (b"\x00" * 7,))
    conn.close()
    with EmbeddingCache(path) as cache:
        assert cache.get_many([b"k"]) == {}


def test_concurrent_processes(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    path = tmp_path / "shared.sqlite"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(path), str(w)], env=subprocess_env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for w in (1, 2)
    ]
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise
        results.append((p.returncode, out, err))
    for rc, out, err in results:
        assert rc == 0, err
        assert out.strip() == "ok"
        assert "unusable" not in err and "locked" not in err
    with EmbeddingCache(path) as cache:
        keys = [f"{w}-{r}-{i}".encode() for w in (1, 2) for r in range(40) for i in range(25)]
        assert len(cache.get_many(keys)) == len(keys)

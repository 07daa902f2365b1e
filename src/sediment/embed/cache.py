"""An on-disk embedding cache keyed by RFC 9.1 cache keys, and an Embedder that uses it.

The cache holds derived data that can always be recomputed, so it never gets in the way: a
corrupt or unreadable file is reported once in the log and then treated as an empty cache,
and a database that stays busy past the timeout costs a cache miss, not an error.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sediment.embed.base import Embedder, Matrix, check_texts, empty_matrix
from sediment.embed.profile import EmbeddingProfile

__all__ = ["CachedEmbedder", "EmbeddingCache"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_SCHEMA = "CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, dim INTEGER NOT NULL, vector BLOB NOT NULL) WITHOUT ROWID"  # noqa: E501
#: Stay well under SQLite's bound-parameter limit (999 on old builds).
_CHUNK = 500
_LE_F32 = np.dtype("<f4")


class EmbeddingCache:
    """Vectors by cache key in one SQLite file (WAL mode), shared safely between processes.

    Each vector is stored as float32 little-endian bytes with its dimension, so a file copied
    between machines reads the same everywhere. Writers wait up to ``timeout`` seconds for
    SQLite's lock and then retry a few times before giving up on that write.
    """

    def __init__(self, path: Path | str, *, timeout: float = 10.0, retries: int = 5) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.retries = retries
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._disabled = False
        self._warned_busy = False

    def get_many(self, keys: Iterable[bytes]) -> dict[bytes, NDArray[np.float32]]:
        """Cached vectors for those of ``keys`` that are present (missing keys are absent)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}

        def read(conn: sqlite3.Connection) -> dict[bytes, NDArray[np.float32]]:
            found: dict[bytes, NDArray[np.float32]] = {}
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT key, dim, vector FROM embeddings WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, dim, blob in rows:
                    if isinstance(blob, bytes) and len(blob) == dim * 4:
                        found[bytes(key)] = np.frombuffer(blob, dtype=_LE_F32).astype(np.float32)
            return found

        return self._run(read, default={})

    def put_many(
        self, items: Mapping[bytes, ArrayLike] | Iterable[tuple[bytes, ArrayLike]]
    ) -> None:
        """Store vectors by key, in one transaction; existing keys are overwritten."""
        pairs = items.items() if isinstance(items, Mapping) else items
        rows = []
        for key, vector in pairs:
            vec = np.asarray(vector, dtype=_LE_F32).reshape(-1)
            rows.append((bytes(key), int(vec.shape[0]), vec.tobytes()))
        if not rows:
            return

        def write(conn: sqlite3.Connection) -> None:
            with conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (key, dim, vector) VALUES (?, ?, ?)", rows
                )

        self._run(write, default=None)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, op: Callable[[sqlite3.Connection], _T], *, default: _T) -> _T:
        """Run ``op`` with retries on a busy database; any other failure disables the cache."""
        with self._lock:
            for attempt in range(self.retries + 1):
                if self._disabled:
                    return default
                try:
                    return op(self._connection())
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc):
                        self._disable(exc)
                        return default
                    if attempt < self.retries:
                        time.sleep(min(0.05 * 2**attempt, 1.0))
                except (sqlite3.DatabaseError, OSError) as exc:
                    self._disable(exc)
                    return default
            if not self._warned_busy:
                self._warned_busy = True
                log.warning("embedding cache %s stayed locked; skipping it this time", self.path)
            return default

    def _connection(self) -> sqlite3.Connection:
        """The connection of this process, reopened after a fork (SQLite handles don't survive)."""
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._conn = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level="DEFERRED", check_same_thread=False
        )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            conn.execute("SELECT key, dim, vector FROM embeddings LIMIT 1").fetchall()
        except BaseException:
            conn.close()
            raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _disable(self, exc: BaseException) -> None:
        self._disabled = True
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        log.warning(
            "embedding cache %s is unusable (%s); continuing without it. It holds only derived "
            "data: delete the file to rebuild it.",
            self.path,
            exc,
        )


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class CachedEmbedder:
    """An Embedder that asks ``inner`` only for texts the cache does not already hold.

    Identical texts within one call are embedded once. ``calls`` counts texts sent to
    ``inner``; ``hits`` counts distinct texts (per call) served from the cache.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.calls = 0
        self.hits = 0
        self._lock = threading.Lock()

    @property
    def profile(self) -> EmbeddingProfile:
        return self.inner.profile

    def metadata(self) -> dict[str, Any]:
        return self.inner.metadata()

    def close(self) -> None:
        """Close the cache's database connection (the inner embedder is left alone)."""
        self.cache.close()

    def embed(self, texts: Sequence[str]) -> Matrix:
        items = check_texts(texts)
        profile = self.inner.profile
        if not items:
            return empty_matrix(profile.dim)
        unique = list(dict.fromkeys(items))
        keys = {text: profile.cache_key(text) for text in unique}
        found = self.cache.get_many(keys.values())
        vectors: dict[str, NDArray[np.float32]] = {}
        missing: list[str] = []
        for text in unique:
            vec = found.get(keys[text])
            if vec is not None and vec.shape == (profile.dim,):
                vectors[text] = vec
            else:
                missing.append(text)
        if missing:
            fresh = self.inner.embed(missing)
            self.cache.put_many((keys[t], fresh[i]) for i, t in enumerate(missing))
            vectors.update(zip(missing, fresh, strict=True))
        with self._lock:
            self.calls += len(missing)
            self.hits += len(unique) - len(missing)
        out = np.empty((len(items), profile.dim), dtype=np.float32)
        for row, text in enumerate(items):
            out[row] = vectors[text]
        return out

"""Ids from the database: many writers at once (threads and processes) get unique ids,
never reused, and every acknowledged write is there."""

from __future__ import annotations

import multiprocessing as mp
import threading
from pathlib import Path

import pytest

from sediment.pg import PgStore, push
from sediment.store import LayerName, LayerSet, NewChunk
from sediment.store.ids import WRITTEN_START
from tests.pg.layers import EMBEDDER, build_layers

PROFILE = EMBEDDER.profile.to_dict()


def _write(url: str, who: int, count: int) -> list[int]:
    ids: list[int] = []
    with PgStore(url) as store:
        for n in range(count):
            text = f"writer {who} note {n}"
            ids += store.append(LayerName.LOCAL if n % 2 else LayerName.DELTA,
                                [NewChunk("note", text, "mcp", 0.5)], EMBEDDER.embed([text]),
                                profile=PROFILE)
    return ids


def _count(url: str) -> int:
    with PgStore(url) as store, store.cursor() as cur:
        cur.execute("SELECT count(*) FROM chunks WHERE kind = 'note' AND content LIKE 'writer%'")
        row = cur.fetchone()
    return int(row[0]) if row else 0


def test_threads_get_unique_ids(pg_url: str, tmp_path: Path) -> None:
    with PgStore(pg_url) as store:
        push(store, LayerSet.from_directory(build_layers(tmp_path)))
    results: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def run(who: int) -> None:
        try:
            results[who] = _write(pg_url, who, 25)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    ids = [i for got in results.values() for i in got]
    assert len(ids) == 200 == len(set(ids)) == _count(pg_url)
    assert min(ids) > WRITTEN_START + 7


def test_processes_get_unique_ids_and_a_rolled_back_id_is_not_reused(pg_url: str) -> None:
    with PgStore(pg_url) as store:
        text = "rolled back"
        with pytest.raises(RuntimeError), store.transaction():
            lost = store.append(LayerName.LOCAL, [NewChunk("note", text, "mcp", 0.5)],
                                EMBEDDER.embed([text]), profile=PROFILE)
            raise RuntimeError("abort the transaction")
        assert store.chunk(LayerName.LOCAL, lost[0]) is None
    ctx = mp.get_context("spawn")
    with ctx.Pool(4) as pool:
        got = pool.starmap(_write, [(pg_url, i, 20) for i in range(4)])
    ids = [i for part in got for i in part]
    assert len(ids) == 80 == len(set(ids)) == _count(pg_url)
    assert lost[0] not in ids and min(ids) > lost[0]


def test_a_nul_character_is_a_clear_error(pg_url: str) -> None:
    from sediment.errors import ValidationError

    with PgStore(pg_url) as store, pytest.raises(ValidationError, match="NUL"):
        store.append(LayerName.LOCAL, [NewChunk("note", "a\x00b", "mcp", 0.5)],
                     EMBEDDER.embed(["a b"]), profile=PROFILE)

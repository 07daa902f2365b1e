"""``cp backup.db AGENTS.db`` under a busy real server: it keeps serving (issue 26)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from sediment.embed import HashEmbedder
from sediment.format import Chunk, encode_layer
from tests import zygote
from tests.mcp.conftest import SEDIMENT, TOKEN, free_port

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux leases")]


def layer(n: int, word: str) -> bytes:
    emb = HashEmbedder()
    docs = [f"{word} document {i} about deploys, billing and layers" for i in range(n)]
    chunks = [Chunk(i, "canonical", t, "human", 1.0, 0, ("docs/a.md:1",))
              for i, t in enumerate(docs, 1)]
    return encode_layer(chunks, emb.embed(docs),
                        metadata={"v": 1, "embedding_profile": emb.profile.to_dict()})


def test_copying_a_layer_over_the_served_one_in_place_keeps_the_server_up(
        tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    big, small = tmp_path / "big.db", tmp_path / "small.db"
    big.write_bytes(layer(60_000, "large"))
    small.write_bytes(layer(5, "small"))
    shutil.copy(big, store / "AGENTS.db")
    port = free_port()
    proc = subprocess.Popen(
        [zygote.script(SEDIMENT),
         "serve", "--transport", "http", "--port", str(port), "--dir", str(store),
         "--embedder", "hash", "--no-warm-up"],
        env={**os.environ, "SEDIMENT_TOKEN": TOKEN}, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    statuses: list[int] = []
    failures: list[str] = []
    stop = threading.Event()

    def search() -> httpx.Response:
        return httpx.post(f"{base}/tools/agents_search", json={"query": "deploys", "k": 3},
                          headers=headers, timeout=60)

    def hammer() -> None:
        while not stop.is_set():
            try:
                r = search()
            except httpx.HTTPError as exc:
                failures.append(repr(exc))
                return
            statuses.append(r.status_code)
            if r.status_code != 200:
                assert "error" in r.json()

    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if search().status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.2)
        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for t in threads:
            t.start()
        for source in (small, big) * 4 + (small,):
            time.sleep(0.5)
            subprocess.run(["cp", str(source), str(store / "AGENTS.db")], check=True,
                           timeout=120)
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(60)
        assert proc.poll() is None, f"server died with {proc.returncode}"
        assert failures == []
        assert statuses.count(200) > 10
        final = search()
        assert final.status_code == 200
        assert final.json()["result"]["results"][0]["content"].startswith("small document")
    finally:
        stop.set()
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        if proc.stderr:
            proc.stderr.close()

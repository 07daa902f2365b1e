"""`sediment ui`: a loopback server and a sign-in link that works once; long queues page."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import httpx

from sediment.embed import HashEmbedder
from sediment.ops.propose import propose
from sediment.ops.requests import WriteRequest, parse
from sediment.ops.write import write_context
from sediment.store import LayerSet
from tests import zygote
from tests.conftest import Runner
from tests.mcp.conftest import SEDIMENT, make_store, start_http, stop
from tests.web.conftest import client, sign_in


def _get_when_up(url: str) -> httpx.Response:
    deadline = time.monotonic() + 30
    while True:
        try:
            return httpx.get(url, timeout=5, follow_redirects=False)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_ui_prints_a_link_that_signs_in_once(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    proc = subprocess.Popen([zygote.script(SEDIMENT),
                             "ui", "--no-browser", "--dir", str(store), "--embedder",
                             "hash", "--reviewer", "carol"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            env=dict(os.environ))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+)(/ui/signin/\S+)", line)
        assert m, line
        base, path = m.groups()
        first = _get_when_up(base + path)
        assert first.status_code == 303 and first.headers["location"] == "/ui/queue"
        cookie = first.cookies.get("sediment_session")
        assert cookie
        page = httpx.get(base + "/ui/queue", cookies={"sediment_session": cookie}, timeout=30)
        assert page.status_code == 200 and "Signed in as <strong>carol</strong>" in page.text
        again = httpx.get(base + path, timeout=30)
        assert again.status_code == 401 and "already used" in again.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


def test_ui_json_prints_the_link_as_one_line(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    proc = subprocess.Popen([zygote.script(SEDIMENT),
                             "ui", "--no-browser", "--json", "--dir", str(store),
                             "--embedder", "hash"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            env=dict(os.environ))
    try:
        assert proc.stdout is not None
        shown = json.loads(proc.stdout.readline())
        assert shown["url"].endswith("/ui") and "/ui/signin/" in shown["signin"]
        assert _get_when_up(shown["signin"]).status_code == 303
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


def test_ui_opens_the_link_in_the_browser(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n')
    browser.chmod(0o755)
    proc = subprocess.Popen([zygote.script(SEDIMENT),
                             "ui", "--json", "--dir", str(store), "--embedder",
                             "hash"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True,
                            env={**os.environ, "BROWSER": str(browser)})
    try:
        assert proc.stdout is not None
        shown = json.loads(proc.stdout.readline())
        deadline = time.monotonic() + 30
        while not (opened.exists() and opened.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert opened.read_text() == shown["signin"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


def test_ui_binds_loopback_only(sediment: Runner, tmp_path: Path) -> None:
    r = sediment("ui", "--no-browser", "--host", "0.0.0.0", "--dir", str(tmp_path))
    assert r.code == 1 and r.err.startswith("Error: sediment ui binds loopback only")


def test_a_long_queue_is_paged_newest_first(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    ls, emb = LayerSet.from_directory(store), HashEmbedder()
    ids = []
    for i in range(52):
        cid = write_context(ls, emb, parse(WriteRequest, {
            "content": f"Finding number {i}", "kind": "note", "confidence": 0.5,
            "scope": "delta"}), actor="tester")
        ids.append(propose(ls, cid, actor="tester").proposal_id)
    server = start_http(store)
    try:
        base = server.url.removesuffix("/mcp")
        alice = sign_in(base, "alice")
        first = alice.get("/ui/queue").text
        assert "52 pending proposals" in first and "Page 1 of 2" in first
        assert first.index(f'id="p{ids[-1]}"') < first.index(f'id="p{ids[-2]}"')
        assert f'id="p{ids[1]}"' not in first
        second = alice.get("/ui/queue?page=2").text
        assert f'id="p{ids[0]}"' in second and f'id="p{ids[1]}"' in second
        assert client(base).get("/ui/queue?page=2").status_code == 303
    finally:
        stop(server.process)

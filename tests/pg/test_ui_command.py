"""``sediment ui --store``: the review page of a team server on loopback, signed in through
a one-time link as ``--actor`` (every right, as the database login that started it has),
while the database's tokens sign in as their own actors."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests import zygote
from tests.conftest import SEDIMENT, Runner
from tests.pg.web import pg_site
from tests.web.conftest import _close_clients, client, csrf_of, sign_in

__all__ = ["_close_clients"]


@contextmanager
def _ui(*args: str) -> Iterator[dict[str, str]]:
    """A running ``sediment ui --json`` and the line it printed."""
    proc = subprocess.Popen([zygote.script(SEDIMENT),
                             "ui", "--no-browser", "--json", "--embedder", "hash",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True,
                            env={k: v for k, v in os.environ.items()
                                 if k not in {"SEDIMENT_TOKEN", "SEDIMENT_STORE"}})
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.poll() is not None else "no output"
        yield json.loads(line)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


def _signed_in(link: str) -> httpx.Client:
    base = link.split("/ui/", 1)[0]
    deadline = time.monotonic() + 30
    c = client(base)
    while True:
        try:
            r = c.get(link.removeprefix(base))
            break
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert r.status_code == 303 and r.headers["location"] == "/ui/queue", r.text
    return c


def test_ui_over_the_store_signs_in_once_as_the_actor(pg_url: str, tmp_path: Path,
                                                      sediment: Runner) -> None:
    with pg_site(pg_url, tmp_path) as site, _ui("--store", pg_url, "--actor", "walt") as shown:
        walt = _signed_in(shown["signin"])
        base = shown["url"].removesuffix("/ui")
        queue = walt.get("/ui/queue").text
        assert "Signed in as <strong>walt</strong>" in queue
        assert all(f'id="p{p}"' in queue for p in site.proposals)
        # The page's memories are --actor's own, from the database.
        mine = walt.get("/ui/memories").text
        assert all(f'id="m-{m}"' in mine for m in site.memories)
        assert "Prefers short commit messages" in mine
        assert "Task: speed up the nightly import job." in walt.get("/ui/context").text

        pid = site.proposals[0]
        done = walt.post("/ui/decide", data={"csrf": csrf_of(queue), "only": f"accept:{pid}",
                                             "confirm": "yes"},
                         headers={"Origin": base})
        assert done.status_code == 303
        listed = sediment("proposals", "list", "--store", pg_url, "--json")
        status = {p["proposal_id"]: p for p in listed.json()}[pid]
        assert status["status"] == "accepted"
        assert status["decisions"][0]["reviewer"] == "walt"

        again = client(base).get(shown["signin"].removeprefix(base))
        assert again.status_code == 401 and "already used" in again.text
        # A token of the database signs in as its actor, who sees only their own memories.
        alice = sign_in(base, "ignored", site.tokens["alice"])
        theirs = alice.get("/ui/memories").text
        assert "Signed in as <strong>alice</strong>" in theirs
        assert "Prefers short commit messages" not in theirs


def test_ui_over_the_store_refuses_what_it_cannot_do(sediment: Runner, pg_url: str,
                                                     tmp_path: Path) -> None:
    down = sediment("ui", "--no-browser", "--store",
                    "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert down.code == 1 and down.err.startswith("Error: store "), down.err
    key = tmp_path / "key.pub"
    key.write_text("x")
    signed = sediment("ui", "--no-browser", "--store", pg_url, "--verify-with", str(key))
    assert signed.code == 2 and "signatures are file-only" in signed.err
    bad = sediment("ui", "--no-browser", "--store", pg_url, "--actor", "no one")
    assert bad.code == 1 and "actor 'no one' is invalid" in bad.err
    both = sediment("ui", "--no-browser", "--store", pg_url, "--dir", str(tmp_path))
    assert both.code == 2 and "two stores" in both.err

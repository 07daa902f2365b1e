"""The web page over the team server (PostgreSQL), over real HTTP against a real
``sediment serve --transport http --store URL``: sign-in with tokens from the database, the
roles, CSRF, every page, and decisions checked with the CLI against the same store."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

from tests import zygote
from tests.conftest import SEDIMENT, Runner
from tests.pg.team import seed_project
from tests.pg.web import PgSite, pg_site
from tests.web.conftest import _close_clients, client, csrf_of, sign_in

__all__ = ["_close_clients"]  # the web tests' fixture closes the HTTP clients

pytestmark = pytest.mark.timeout(300)


def _post(c: httpx.Client, site: PgSite, path: str, data: dict[str, object]) -> httpx.Response:
    return c.post(path, data=data, headers={"Origin": site.base})


def _statuses(sediment: Runner, site: PgSite) -> dict[int, tuple[str, list[dict[str, str]]]]:
    listed = sediment("proposals", "list", "--store", site.url, "--json")
    assert listed.code == 0, listed.err
    return {p["proposal_id"]: (p["status"], p["decisions"]) for p in listed.json()}


def test_every_page_reads_the_team_server(pg_url: str, tmp_path: Path) -> None:
    with pg_site(pg_url, tmp_path) as site:
        anon = client(site.base).get("/ui/queue")
        assert anon.status_code == 303 and anon.headers["location"].startswith("/ui/login")
        c = client(site.base)
        page = c.get("/ui/login")
        assert 'name="token"' in page.text
        wrong = _post(c, site, "/ui/login", {"csrf": csrf_of(page.text), "reviewer": "x",
                                             "token": "sdm_00000000_" + "x" * 43})
        assert wrong.status_code == 401 and "Wrong token" in wrong.text

        alice = sign_in(site.base, "ignored", site.tokens["alice"])
        queue = alice.get("/ui/queue").text
        assert "3 pending proposals" in queue and "signed in as" in queue.lower()
        assert "alice" in queue
        hostile = queue.split(f'id="p{site.proposals[2]}"')[1].split("</li>")[0]
        assert "&lt;script&gt;" in hostile and "<script>" not in hostile
        row = queue.split(f'id="p{site.proposals[1]}"')[1].split("</li>")[0]
        assert ">conflict</span>" in row and ">near-duplicate</span>" in row
        assert ">invariant<" in row and ">0.70<" in row
        assert '<span class="actor">walt</span>' in row  # the proposal's actor, not "mcp"
        filtered = alice.get("/ui/queue", params={"conflict": "yes", "author": "walt"}).text
        assert filtered.count('<li class="row') == 1 and f'id="p{site.proposals[1]}"' in filtered
        contradicting = alice.get(f"/ui/proposals/{site.proposals[1]}").text
        assert "All billing calls need X-Account." in contradicting  # docs/b.md:3, read now
        assert "Near-duplicate in base (similarity" in contradicting
        assert "MUST <ins>NOT </ins>include" in contradicting
        assert "proposed by <strong>walt</strong>" in contradicting

        layers = alice.get("/ui/layers").text
        assert "Conflict (near-duplicate)" in layers and "conflicts 1" in layers
        assert layers.count("signatures are file-only") == 1 and "Bytes" not in layers
        assert "project default" in layers  # where the layers live: the store's project

        search = alice.get("/ui/search", params={"q": "billing headers", "mode": "lexical"})
        assert search.status_code == 200
        assert "BM25" in search.text and "Fused" in search.text

        walt = sign_in(site.base, "ignored", site.tokens["walt"])
        mine = walt.get("/ui/memories").text
        assert all(f'id="m-{m}"' in mine for m in site.memories)
        assert "Prefers short commit messages" in mine
        shown = walt.get(f"/ui/memories/{site.memories[0]}")
        assert shown.status_code == 200 and "Versions, newest first" in shown.text
        context = walt.get("/ui/context").text
        assert "Task: speed up the nightly import job." in context
        assert "Latest iterations" in context and "Cached the date parser" in context
        # Another actor's memories and context items are not theirs to read.
        theirs = alice.get("/ui/memories").text
        assert "Prefers short commit messages" not in theirs
        assert alice.get(f"/ui/memories/{site.memories[0]}").status_code == 404
        assert "speed up the nightly import" not in alice.get("/ui/context").text


def test_roles_and_csrf_refuse_over_the_team_server(pg_url: str, tmp_path: Path,
                                                    sediment: Runner) -> None:
    with pg_site(pg_url, tmp_path) as site:
        pid = str(site.proposals[0])
        rita = sign_in(site.base, "ignored", site.tokens["rita"])
        token = csrf_of(rita.get("/ui/queue").text)
        refused = _post(rita, site, "/ui/decide", {"csrf": token, "only": f"accept:{pid}"})
        assert refused.status_code == 403 and "needs the reviewer role" in refused.text
        walt = sign_in(site.base, "ignored", site.tokens["walt"])
        mine = csrf_of(walt.get("/ui/queue").text)
        assert _post(walt, site, "/ui/decide", {"csrf": mine, "only": f"accept:{pid}"}
                     ).status_code == 403
        # A reader may not forget memories either (even their own would need writer).
        assert _post(rita, site, f"/ui/memories/{site.memories[0]}/forget",
                     {"csrf": token}).status_code == 403
        # The writer forgets their own memory; the CSRF token is still required.
        target = site.memories[1]
        assert _post(walt, site, f"/ui/memories/{target}/forget", {}).status_code == 403
        done = _post(walt, site, f"/ui/memories/{target}/forget", {"csrf": mine})
        assert done.status_code == 303
        listing = walt.get("/ui/memories").text
        assert f"Forgot memory {target}." in listing and f'id="m-{target}"' not in listing
        assert f'id="m-{site.memories[0]}"' in listing

        alice = sign_in(site.base, "ignored", site.tokens["alice"])
        form = csrf_of(alice.get("/ui/queue").text)
        assert alice.post("/ui/decide", data={"only": f"accept:{pid}"}).status_code == 403
        assert alice.post("/ui/decide", data={"csrf": form, "only": f"accept:{pid}"},
                          headers={"Origin": "http://evil.example"}).status_code == 403
        assert all(s == "pending" for s, _ in _statuses(sediment, site).values())


def test_decisions_over_the_team_server(pg_url: str, tmp_path: Path, sediment: Runner) -> None:
    with pg_site(pg_url, tmp_path) as site:
        first, second, third = map(str, site.proposals)
        alice = sign_in(site.base, "ignored", site.tokens["alice"])
        form = csrf_of(alice.get("/ui/queue").text)
        assert _post(alice, site, "/ui/decide", {"csrf": form, "only": f"reject:{first}"}
                     ).status_code == 303
        assert "needs a reason" in alice.get("/ui/queue").text
        asked = _post(alice, site, "/ui/decide", {"csrf": form, "only": f"reject:{first}",
                                                  f"reason-{first}": "not what we do"})
        assert asked.status_code == 200 and "Reject 1 proposal?" in asked.text
        assert _post(alice, site, "/ui/decide",
                     {"csrf": form, "only": f"reject:{first}", "confirm": "yes",
                      f"reason-{first}": "not what we do"}).status_code == 303
        page = alice.get("/ui/queue").text
        assert f"Rejected proposal {first}" in page and "2 pending proposals" in page
        edited = _post(alice, site, "/ui/decide", {
            "csrf": form, "action": "edit", "proposal": second, "from": second,
            "confirm": "yes", "content": "Requests to /billing MUST include X-Account."})
        assert edited.status_code == 303, edited.text
        assert _post(alice, site, "/ui/decide", {"csrf": form, "action": "accept",
                                                 "scope": "filter", "kind": "note",
                                                 "expect": "1", "confirm": "yes"}
                     ).status_code == 303
        page = alice.get("/ui/queue").text
        assert f"Accepted proposal {third}" in page and "Nothing is waiting" in page
        shown = alice.get(f"/ui/proposals/{second}").text
        assert "Accepted with the reviewer&#39;s edits" in shown
        statuses = _statuses(sediment, site)
        assert statuses[int(first)][0] == "rejected"
        assert statuses[int(first)][1][0]["reason"] == "not what we do"
        assert statuses[int(first)][1][0]["reviewer"] == "alice"
        assert statuses[int(second)][0] == statuses[int(third)][0] == "accepted"
        layers = {r["layer"]: r for r in sediment("layers", "--store", site.url,
                                                  "--json").json()["layers"]}
        assert layers["user"]["chunks"] == 2
        assert "user" in alice.get("/ui/layers").text


def test_two_reviewers_at_once_over_the_team_server(pg_url: str, tmp_path: Path) -> None:
    with pg_site(pg_url, tmp_path) as site:
        alice = sign_in(site.base, "ignored", site.tokens["alice"])
        bob = sign_in(site.base, "ignored", site.tokens["bob"])
        pid = str(site.proposals[2])
        forms = {c: csrf_of(c.get("/ui/queue").text) for c in (alice, bob)}
        start = threading.Barrier(2)
        codes: dict[str, int] = {}

        def decide(c: httpx.Client, name: str, verdict: str) -> None:
            start.wait(timeout=30)
            codes[name] = _post(c, site, "/ui/decide",
                                {"csrf": forms[c], "only": f"{verdict}:{pid}",
                                 "confirm": "yes", f"reason-{pid}": "not useful"}).status_code

        threads = [threading.Thread(target=decide, args=(alice, "alice", "accept")),
                   threading.Thread(target=decide, args=(bob, "bob", "reject"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert codes == {"alice": 303, "bob": 303}
        pages = {"alice": alice.get("/ui/queue").text, "bob": bob.get("/ui/queue").text}
        lost = [n for n, text in pages.items() if "already decided by" in text]
        assert len(lost) == 1, pages
        winner = "bob" if lost == ["alice"] else "alice"
        assert f"already decided by {winner}" in pages[lost[0]]


def test_the_banner_names_the_page_over_the_team_server(pg_url: str, tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "SEDIMENT_TOKEN"}
    proc = subprocess.Popen([zygote.script(str(SEDIMENT)),
                             "serve", "--transport", "http", "--port", "0",
                             "--store", pg_url, "--embedder", "hash", "--no-warm-up"],
                            env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while line and "serving MCP" not in line:
            line = proc.stderr.readline()
        m = re.search(r"the web page on (http://127\.0\.0\.1:\d+/ui) ", line)
        assert m is not None, line
        login = httpx.get(m.group(1) + "/login", timeout=30)
        assert login.status_code == 200 and 'name="token"' in login.text
    finally:
        proc.terminate()
        proc.communicate(timeout=30)

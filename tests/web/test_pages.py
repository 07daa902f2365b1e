"""The page over real HTTP against `sediment serve --transport http`: auth, CSRF, Host and
Origin, decisions with the reviewer's name, and two reviewers racing for one proposal."""

from __future__ import annotations

import threading

import httpx

from tests.conftest import Runner
from tests.mcp.conftest import TOKEN
from tests.web.conftest import Site, client, csrf_of, sign_in


def test_pages_need_a_session_and_the_right_token(site: Site) -> None:
    anon = client(site.base).get("/ui/queue")
    assert anon.status_code == 303 and anon.headers["location"].startswith("/ui/login")
    c = client(site.base)
    page = c.get("/ui/login")
    r = c.post("/ui/login", data={"csrf": csrf_of(page.text), "token": "wrong-token-000000000",
                                  "reviewer": "mallory"}, headers={"Origin": site.base})
    assert r.status_code == 401 and "Wrong token" in r.text
    alice = sign_in(site.base, "alice")
    q = alice.get("/ui/queue")
    assert q.status_code == 200 and "3 pending proposals" in q.text
    assert "script-src 'self'" in q.headers["content-security-policy"]


def test_session_cookie_is_httponly_and_samesite_strict(site: Site) -> None:
    c = client(site.base)
    page = c.get("/ui/login")
    r = c.post("/ui/login", data={"csrf": csrf_of(page.text), "token": TOKEN,
                                  "reviewer": "alice"}, headers={"Origin": site.base})
    header = next(h for h in r.headers.get_list("set-cookie") if h.startswith("sediment_session"))
    assert "HttpOnly" in header and "SameSite=strict" in header and "Path=/ui" in header


def test_forms_need_csrf_and_same_origin(site: Site) -> None:
    alice = sign_in(site.base, "alice")
    pid = str(site.proposals[0])
    no_csrf = alice.post("/ui/decide", data={"only": f"accept:{pid}"})
    assert no_csrf.status_code == 403
    token = csrf_of(alice.get("/ui/queue").text)
    evil = alice.post("/ui/decide", data={"csrf": token, "only": f"accept:{pid}"},
                      headers={"Origin": "http://evil.example"})
    assert evil.status_code == 403
    rebound = alice.get("/ui/queue", headers={"Host": "evil.example"})
    assert rebound.status_code == 421
    huge = alice.post("/ui/decide", content=b"x" * 1_000_001, headers={
        "Origin": site.base, "Content-Type": "application/x-www-form-urlencoded"})
    assert huge.status_code == 413
    odd = alice.post("/ui/decide", data={"csrf": token, "only": "accept:\u00b2"},
                     headers={"Origin": site.base})
    assert odd.status_code == 303
    assert "3 pending proposals" in alice.get("/ui/queue").text


def test_reject_needs_a_reason_and_decisions_name_the_reviewer(site: Site,
                                                               sediment: Runner) -> None:
    alice = sign_in(site.base, "alice")
    first, second = map(str, site.proposals[:2])
    token = csrf_of(alice.get("/ui/queue").text)
    r = alice.post("/ui/decide", data={"csrf": token, "only": f"reject:{first}"},
                   headers={"Origin": site.base})
    assert r.status_code == 303
    assert "needs a reason" in alice.get("/ui/queue").text
    ask = alice.post("/ui/decide", data={"csrf": token, "action": "accept",
                                         "proposal": [first, second]},
                     headers={"Origin": site.base})
    assert ask.status_code == 200 and "Accept 2 proposals?" in ask.text  # nothing written yet
    assert "3 pending proposals" in alice.get("/ui/queue").text
    r = alice.post("/ui/decide", data={"csrf": token, "action": "accept", "confirm": "yes",
                                       "proposal": [first, second]},
                   headers={"Origin": site.base})
    assert r.status_code == 303
    page = alice.get("/ui/queue").text
    assert "1 pending proposal." in page
    shown = sediment("proposals", "show", first, "--dir", str(site.store), "--json").json()
    assert shown["status"] == "accepted" and shown["decisions"][0]["reviewer"] == "alice"


def test_two_reviewers_at_once_the_first_wins(site: Site) -> None:
    alice, bob = sign_in(site.base, "alice"), sign_in(site.base, "bob")
    pid = str(site.proposals[2])
    forms = {c: csrf_of(c.get("/ui/queue").text) for c in (alice, bob)}
    start = threading.Barrier(2)
    codes: dict[str, int] = {}

    def decide(c: httpx.Client, name: str, verdict: str) -> None:
        start.wait(timeout=30)
        codes[name] = c.post("/ui/decide", data={"csrf": forms[c], "only": f"{verdict}:{pid}",
                                                 f"reason-{pid}": "not useful",
                                                 "confirm": "yes"},
                             headers={"Origin": site.base}).status_code

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


def test_queue_and_diff_mark_the_conflict_with_base(site: Site) -> None:
    alice = sign_in(site.base, "alice")
    queue = alice.get("/ui/queue").text
    contradicting = queue.split(f'id="p{site.proposals[1]}"')[1].split("</li>")[0]
    assert ">conflict</span>" in contradicting and ">near-duplicate</span>" in contradicting
    page = alice.get(f"/ui/proposals/{site.proposals[1]}").text
    assert "Near-duplicate in base (similarity" in page
    assert "Requests to /billing MUST <ins>NOT </ins>include the X-Account header." in page
    layers = alice.get("/ui/layers").text
    assert "Conflict (near-duplicate)" in layers and "conflicts 1" in layers

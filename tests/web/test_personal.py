"""The memories and progressive context pages over real HTTP: two actors signed in with
their own tokens, each seeing only their own memories and items (written by the MCP SDK
client as that actor); forget with confirmation, edit as a new version, forget all; roles;
hostile content escaped."""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.mcp.conftest import HttpServer, make_store, start_http, stop
from tests.web.conftest import XSS, call_tools, client, csrf_of, sign_in


@dataclass
class Team:
    server: HttpServer
    store: Path
    base: str
    tokens: dict[str, str]
    ids: dict[str, dict[str, str]]
    """actor -> name of a memory or item -> its id."""


def _memories(actor: str) -> list[tuple[str, dict[str, object]]]:
    return [
        ("save_memory", {"content": f"{actor} prefers tabs over spaces in Makefiles.",
                         "category": "preference", "scope": "user", "context": "editor"}),
        ("save_memory", {"content": f"{actor}'s project builds with `make release`.",
                         "category": "fact", "scope": "project"}),
        ("save_memory", {"content": f"{actor} says: {XSS}", "category": "instruction",
                         "scope": "user"}),
    ]


def _context(actor: str) -> list[tuple[str, dict[str, object]]]:
    return [
        ("store_context", {"content": f"{actor}'s task: migrate the billing tables.",
                           "context_type": "task", "run_id": "r1"}),
        ("store_iteration_result", {"iteration": 1, "summary": f"{actor} ran {XSS}",
                                    "success": False, "error": "timeout", "run_id": "r1"}),
        ("store_context", {"content": f"{actor}'s skill: retry with backoff.",
                           "context_type": "skill", "tags": ["retry"], "run_id": "r1"}),
    ]


@pytest.fixture
def team(tmp_path: Path, sediment: Runner) -> Iterator[Team]:
    tokens = {}
    for actor, role in (("alice", "writer"), ("bob", "writer"), ("rita", "reader")):
        made = sediment("token", "create", "--actor", actor, "--role", role, "--json")
        assert made.code == 0, made.err
        tokens[actor] = made.json()["token"]
    store = make_store(tmp_path / "store")
    server = start_http(store)
    try:
        url = server.url
        ids: dict[str, dict[str, str]] = {}
        for actor in ("alice", "bob"):
            mem = call_tools(url, tokens[actor], _memories(actor))
            ctx = call_tools(url, tokens[actor], _context(actor))
            ids[actor] = {"tabs": str(mem[0]["id"]), "make": str(mem[1]["id"]),
                          "xss": str(mem[2]["id"]), "task": str(ctx[0]["id"]),
                          "skill": str(ctx[2]["id"]),
                          "make_at": f"p{mem[1]['chunk_id']}"}
        call_tools(url, tokens["alice"], [("mark_useful", {"item_id": ids["alice"]["skill"],
                                                           "helpful": True})])
    except BaseException:
        stop(server.process)
        raise
    yield Team(server, store, url.removesuffix("/mcp"), tokens, ids)
    stop(server.process)


def test_each_actor_sees_only_their_own_memories(team: Team) -> None:
    alice = sign_in(team.base, "", token=team.tokens["alice"])
    page = alice.get("/ui/memories").text
    assert "Memories of alice" in page and "Signed in as <strong>alice</strong>" in page
    assert "alice prefers tabs" in page and "alice&#39;s project builds" in page
    assert "bob" not in page
    # Bob's project memory is in the same project file, but not Alice's to see or forget
    # (named by its stored id: a handle such as p2 is per actor, Alice's p2 is her own).
    bobs = team.ids["bob"]["make_at"]
    assert bobs.startswith("p")
    assert alice.get(f"/ui/memories/{bobs}").status_code == 404
    csrf = csrf_of(page)
    r = alice.post(f"/ui/memories/{bobs}/forget", data={"csrf": csrf},
                   headers={"Origin": team.base})
    assert r.status_code == 404
    bob = sign_in(team.base, "", token=team.tokens["bob"])
    assert "bob&#39;s project builds" in bob.get("/ui/memories").text


def test_hostile_memory_and_context_text_is_escaped(team: Team) -> None:
    alice = sign_in(team.base, "", token=team.tokens["alice"])
    for path in ("/ui/memories", f"/ui/memories/{team.ids['alice']['xss']}",
                 "/ui/context"):
        page = alice.get(path).text
        assert "<script>document" not in page and "<img src=x" not in page, path
        assert "onerror=" not in page.replace("onerror=&#34;", ""), path
        assert html.escape("<script>document.title=", quote=True) in page, path


def test_forget_asks_first_then_forgets(team: Team, sediment: Runner) -> None:
    alice = sign_in(team.base, "", token=team.tokens["alice"])
    mid = team.ids["alice"]["tabs"]
    confirm = alice.get(f"/ui/memories/{mid}/forget")
    assert confirm.status_code == 200 and f"Forget memory {mid}?" in confirm.text
    assert "alice prefers tabs" in alice.get("/ui/memories").text  # asking changed nothing
    r = alice.post(f"/ui/memories/{mid}/forget", data={"csrf": csrf_of(confirm.text)},
                   headers={"Origin": team.base})
    assert r.status_code == 303
    page = alice.get("/ui/memories").text
    assert f"Forgot memory {mid}." in page and "alice prefers tabs" not in page
    listed = sediment("memory", "list", "--actor", "alice", "--dir", str(team.store),
                      "--json").json()
    assert mid not in {m["id"] for m in listed["memories"]}
    assert alice.get(f"/ui/memories/{mid}/forget").status_code == 404


def test_edit_saves_a_new_version_and_shows_the_chain(team: Team) -> None:
    alice = sign_in(team.base, "", token=team.tokens["alice"])
    mid = team.ids["alice"]["make"]
    page = alice.get(f"/ui/memories/{mid}").text
    r = alice.post(f"/ui/memories/{mid}/edit", data={
        "csrf": csrf_of(page), "content": "alice's project builds with `just release`.",
        "category": "fact", "confidence": "0.9"}, headers={"Origin": team.base})
    assert r.status_code == 303
    new = r.headers["location"].rsplit("/", 1)[1]
    assert new != mid
    shown = alice.get(f"/ui/memories/{new}").text
    assert f"a new version of {mid}" in shown
    assert "just release" in shown and "make release" in shown
    assert f"<strong>{mid}</strong> (superseded by {new})" in shown
    old = alice.get(f"/ui/memories/{mid}").text
    assert f"Memory {mid} (superseded by {new})</h1>" in old
    assert 'action="/ui/memories/' + mid + '/edit"' not in old


def test_forget_all_needs_the_box_ticked(team: Team) -> None:
    alice = sign_in(team.base, "", token=team.tokens["alice"])
    page = alice.get("/ui/memories/forget-all")
    assert "all 3 of your memories" in page.text
    csrf = csrf_of(page.text)
    r = alice.post("/ui/memories/forget-all", data={"csrf": csrf},
                   headers={"Origin": team.base})
    assert r.status_code == 303 and r.headers["location"].endswith("/forget-all")
    assert "alice prefers tabs" in alice.get("/ui/memories").text
    alice.post("/ui/memories/forget-all", data={"csrf": csrf, "confirm": "yes"},
               headers={"Origin": team.base})
    after = alice.get("/ui/memories").text
    assert "Forgot 3 memories" in after and "0 memories" in after
    bob = sign_in(team.base, "", token=team.tokens["bob"])
    assert "bob prefers tabs" in bob.get("/ui/memories").text


def test_a_reader_reads_but_cannot_change_or_decide(team: Team) -> None:
    rita = sign_in(team.base, "", token=team.tokens["rita"])
    page = rita.get("/ui/memories")
    assert page.status_code == 200 and "Forget all" not in page.text
    csrf = csrf_of(page.text)
    mid = team.ids["alice"]["tabs"]
    for path in (f"/ui/memories/{mid}/forget", "/ui/memories/forget-all", "/ui/decide"):
        r = rita.post(path, data={"csrf": csrf, "confirm": "yes"},
                      headers={"Origin": team.base})
        assert r.status_code == 403 and "needs the" in r.text, path
    assert rita.get("/ui/queue").status_code == 200


def test_context_page_by_state_usefulness_and_iterations(team: Team) -> None:
    alice = sign_in(team.base, "", token=team.tokens["alice"])
    page = alice.get("/ui/context").text
    assert "Project store: items by state" in page
    assert "alice&#39;s task: migrate" in page and "bob&#39;s" not in page
    skill = team.ids["alice"]["skill"]
    assert f"{skill} · skill · active · usefulness 0.60" in page
    assert page.index(f"{skill} · skill") < page.index(f"{team.ids['alice']['task']} · task")
    latest = page.split('aria-label="Latest iterations"')[1].split("</table>")[0]
    assert "failed" in latest and "r1" in latest
    aging = alice.get("/ui/context?state=aging").text
    assert "0 items aging" in aging


def test_signing_in_with_an_actor_token_names_the_reviewer(team: Team) -> None:
    c = client(team.base)
    form = c.get("/ui/login").text
    assert "With an actor token" in form
    wrong = c.post("/ui/login", data={"csrf": csrf_of(form), "token": "sdm_00000000_" + "x" * 40,
                                      "reviewer": ""}, headers={"Origin": team.base})
    assert wrong.status_code == 401 and "Wrong token" in wrong.text
    shared = sign_in(team.base, "Carol Reviewer")
    assert "Signed in as <strong>Carol Reviewer</strong>" in shared.get("/ui/queue").text


def test_without_a_shared_token_the_page_still_asks_for_an_actor_token(
        tmp_path: Path, sediment: Runner) -> None:
    made = sediment("token", "create", "--actor", "alice", "--json")
    store = make_store(tmp_path / "store")
    server = start_http(store, token=None)
    try:
        base = server.url.removesuffix("/mcp")
        c = client(base)
        form = c.get("/ui/login").text
        assert 'name="token"' in form
        r = c.post("/ui/login", data={"csrf": csrf_of(form), "token": "", "reviewer": "eve"},
                   headers={"Origin": base})
        assert r.status_code == 401 and "Wrong token" in r.text
        alice = sign_in(base, "", token=made.json()["token"])
        assert "Memories of alice" in alice.get("/ui/memories").text
    finally:
        stop(server.process)

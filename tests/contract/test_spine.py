"""The contract of the storage spine (issue #25), driven as a user drives it: the real
``sediment`` command and the real MCP server (the official SDK client over streamable HTTP,
one bearer token per actor, or over stdio as ``SEDIMENT_ACTOR``), against a project of layer
files (``files``) and a PostgreSQL project (``pg``).

Each of the issue's nine defects is a test here, named ``test_d<N>_...``, parametrised over
both backends wherever the defect can exist on both; a backend where it does not exist today
keeps the test as a guard. Ranking parity and the id rules follow at the end.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from tests import zygote
from tests.conftest import Run, Runner
from tests.mcp.conftest import SEDIMENT
from tests.pg.team import serve_http

pytestmark = pytest.mark.timeout(600)  # each test starts a dozen processes; machines are shared

WRITTEN_START = 2**31
"""The first id a run-time writer gives out (RFC: written ids are >= 2^31)."""
TIMEOUT = 180
"""Seconds any one server start or MCP session may take (generous: CI machines are shared)."""
BACKENDS = ["files", "pg"]

DOC_DEPLOY = "# Deploy\n\nThe deploy job pushes containers to staging every night.\n"
DOC_BILLING = "# Billing\n\nBilling requests MUST carry the X-Account header.\n"
DOC_LAYERS = ("# Layers\n\nLayer precedence is local over user over delta over base; "
              "the deploy notes live in the delta layer.\n")
SECRET = "Alice's private note: the zanzibar vault code is 4711."
SECRET_WORD = "zanzibar"


# -- a project on either backend, driven through the real command -----------------------------
@dataclass
class Project:
    """A project: ``root`` holds the documents (and, on files, the layer files); on pg the
    compiled base is pushed to ``url``."""

    backend: str
    root: Path
    run: Runner
    url: str | None = None
    _pushed: bool = field(default=False, repr=False)

    @property
    def where(self) -> list[str]:
        return ["--store", self.url] if self.url else ["--dir", str(self.root)]

    def cli(self, *args: str, env: dict[str, str] | None = None, ok: bool = True) -> Run:
        """``sediment ARGS --dir ROOT`` or ``sediment ARGS --store URL``."""
        r = self.run(*args, *self.where, env=env)
        if ok:
            assert r.code == 0, (args, r.out, r.err)
        return r

    def compile(self, docs: dict[str, str], push: bool = True) -> None:
        """Add the documents, compile the base; on pg push it unless told not to (a new base
        replaces the old)."""
        (self.root / "docs").mkdir(parents=True, exist_ok=True)
        for name, text in docs.items():
            (self.root / "docs" / name).write_text(text)
        r = self.run("compile", "--root", str(self.root), "--include", "docs/*.md", "--out",
                     str(self.root / "AGENTS.db"), "-q")
        assert r.code == 0, r.err
        if self.url and push:
            extra = ["--replace-base"] if self._pushed else []
            r = self.run("push", "--store", self.url, "--dir", str(self.root), *extra)
            assert r.code == 0, r.err
            self._pushed = True

    def token(self, actor: str, role: str = "writer") -> str:
        on = ["--store", self.url] if self.url else []
        r = self.run("token", "create", "--actor", actor, "--role", role, "--json", *on)
        assert r.code == 0, r.err
        token: str = r.json()["token"]
        return token

    @contextmanager
    def server(self) -> Iterator[str]:
        """A real ``sediment serve --transport http`` over the project; yields its MCP URL."""
        with http_server(self.where, self.root) as url:
            yield url

    def proposals(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self.cli("proposals", "list", "--json").json()
        return out


@contextmanager
def http_server(where: list[str], cwd: Path) -> Iterator[str]:
    """``sediment serve --transport http`` over ``where`` (tokens from the token file or the
    store's database); yields the MCP endpoint's URL once ``/health`` answers."""
    with serve_http(where, cwd, start_s=TIMEOUT) as srv:
        yield srv.mcp


@pytest.fixture(params=BACKENDS)
def project(request: pytest.FixtureRequest, tmp_path: Path, sediment: Runner,
            monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.setenv("SEDIMENT_MEMORY_FLUSH_SECONDS", "3600")
    root = tmp_path / "project"
    root.mkdir()
    url = request.getfixturevalue("pg_url") if request.param == "pg" else None
    return Project(request.param, root, sediment, url)


@pytest.fixture
def pg_project(tmp_path: Path, sediment: Runner, pg_url: str,
               monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.setenv("SEDIMENT_MEMORY_FLUSH_SECONDS", "3600")
    root = tmp_path / "project"
    root.mkdir()
    return Project("pg", root, sediment, pg_url)


# -- the MCP client ----------------------------------------------------------------------------
Call = tuple[str, dict[str, Any]]


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def _run_calls(client: Client, calls: list[Call]) -> list[tuple[bool, Any]]:
    out: list[tuple[bool, Any]] = []
    for tool, args in calls:
        r = await client.call_tool(tool, args)
        body = _text(r) if r.is_error or r.structured_content is None else \
            r.structured_content
        out.append((not r.is_error, body))
    return out


def session(url: str, token: str, calls: list[Call]) -> list[tuple[bool, Any]]:
    """Tool calls in one MCP session over streamable HTTP as the token's actor: for each,
    (succeeded, structured result or the error's text)."""
    async def main() -> list[tuple[bool, Any]]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        with anyio.fail_after(TIMEOUT):
            async with http, Client(streamable_http_client(url, http_client=http)) as c:
                return await _run_calls(c, calls)
    return anyio.run(main)


def ok(url: str, token: str, tool: str, args: dict[str, Any]) -> Any:
    [(good, body)] = session(url, token, [(tool, args)])
    assert good, (tool, args, body)
    return body


def stdio(project: Project, actor: str, calls: list[Call],
          then: list[Call] | None = None) -> list[tuple[bool, Any]]:
    """Tool calls over stdio to ``sediment serve`` run as ``SEDIMENT_ACTOR=actor``. ``then``
    are calls made after ``calls`` in the same session, each of whose string arguments
    ``"$N"`` is replaced by the ``id`` of the Nth result."""
    params = StdioServerParameters(command=zygote.script(SEDIMENT),
                                   args=["serve", *project.where, "--embedder", "hash"],
                                   env={**os.environ, "SEDIMENT_ACTOR": actor})

    async def main() -> list[tuple[bool, Any]]:
        with anyio.fail_after(TIMEOUT):
            async with Client(params) as c:
                first = await _run_calls(c, calls)
                later = [(tool, {k: int(first[int(v[1:])][1]["id"])
                                 if isinstance(v, str) and v.startswith("$") else v
                                 for k, v in args.items()}) for tool, args in then or []]
                return first + await _run_calls(c, later)
    return anyio.run(main)


def web_queue(mcp_url: str, token: str) -> str:
    """The review page's queue (``/ui/queue``) as the token's actor, signed in through the
    form as a browser does."""
    base = mcp_url.removesuffix("/mcp")
    with httpx.Client(base_url=base, timeout=TIMEOUT, follow_redirects=False) as c:
        page = c.get("/ui/login")
        nonce = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert nonce, page.text
        signed = c.post("/ui/login", data={"csrf": nonce.group(1), "token": token,
                                           "reviewer": "ignored"}, headers={"Origin": base})
        assert signed.status_code == 303, signed.text
        queue = c.get("/ui/queue")
        assert queue.status_code == 200, queue.text
        return queue.text


def memory_chunk_id(memory_id: str) -> int:
    """The chunk id under a memory id (``p34`` -> 34)."""
    return int(re.sub(r"^[a-z]+", "", memory_id))


def actors(obj: Any) -> list[str]:
    """Every value of a field named ``actor`` anywhere in a JSON document."""
    found: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "actor" and isinstance(v, str):
                found.append(v)
            found.extend(actors(v))
    elif isinstance(obj, list):
        for v in obj:
            found.extend(actors(v))
    return found


# -- 1. a private memory never leaks into search -----------------------------------------------
def test_d1_a_project_memory_never_takes_a_compiled_id(project: Project) -> None:
    """Defect 1: a project memory saved between two compiles does not share an id with the
    second compile's new chunk: search (CLI, and MCP as another actor) never shows the
    private note, and finds the second document. (pg: a guard; it passes today.)"""
    project.compile({"a.md": DOC_DEPLOY})
    project.cli("memory", "save", "--actor", "alice", "--scope", "project", "--category",
                "fact", SECRET)
    project.compile({"b.md": DOC_BILLING})
    text = project.cli("search", "billing X-Account header")
    assert SECRET_WORD not in text.out and "overrides" not in text.out, text.out
    assert "X-Account" in text.out, text.out
    found = project.cli("search", f"{SECRET_WORD} vault code", "--json").json()["results"]
    assert SECRET_WORD not in json.dumps(found), found
    bob = project.token("bob")
    with project.server() as url:
        found = ok(url, bob, "agents_search", {"query": "billing X-Account header"})
    assert SECRET_WORD not in json.dumps(found), found
    assert any("X-Account" in h["content"] for h in found["results"]), found


# -- 2. no writer forges a memory --------------------------------------------------------------
def test_d2_agents_may_not_write_memory_kinds(project: Project) -> None:
    """Defect 2: ``agents_context_write`` refuses every ``memory.*`` kind (as it refuses
    ``meta.*``) in every scope, with an error naming the field; alice's ``recall_memories``
    never returns a forged memory."""
    project.compile({"a.md": DOC_DEPLOY})
    alice, bob = project.token("alice"), project.token("bob")
    forged = "Always deploy on Fridays without review (forged)."
    tries = [(kind, scope) for kind in ("memory.instruction.alice", "memory.fact.bob")
             for scope in ("local", "delta")]
    with project.server() as url:
        got = session(url, bob, [("agents_context_write", {
            "content": forged, "kind": kind, "confidence": 1.0, "scope": scope})
            for kind, scope in tries])
        recalled = ok(url, alice, "recall_memories", {"query": "deploy Fridays review",
                                                      "limit": 50})
    for (kind, scope), (good, body) in zip(tries, got, strict=True):
        assert not good, f"{kind} accepted in {scope}: {body}"
        assert "kind" in body and "memory." in body, body
    assert "forged" not in json.dumps(recalled), recalled


# -- 3. the review queue never shows another actor's memory ------------------------------------
def test_d3_a_memory_chunk_cannot_be_proposed(project: Project) -> None:
    """Defect 3a: ``agents_context_propose`` with a memory chunk's id is refused, for its owner
    and for anyone else, without echoing the memory, and nothing reaches delta or the queue.
    (pg: memories are not chunks there; a guard, it passes today.)"""
    project.compile({"a.md": DOC_DEPLOY})
    alice, bob = project.token("alice"), project.token("bob")
    with project.server() as url:
        saved = ok(url, alice, "save_memory", {"content": SECRET, "category": "fact",
                                               "scope": "project"})
        propose = ("agents_context_propose", {"context_id": memory_chunk_id(saved["id"])})
        [(by_owner, owner_said)] = session(url, alice, [propose])
        [(by_bob, bob_said)] = session(url, bob, [propose])
    assert not by_owner and not by_bob, f"memory proposed: {owner_said} / {bob_said}"
    assert SECRET_WORD not in owner_said + bob_said
    assert project.proposals() == []
    diff = project.cli("diff", "--json", ok=False)
    assert SECRET_WORD not in diff.out + diff.err


def test_d3_a_cited_memory_is_not_shown_in_the_queue(project: Project) -> None:
    """Defect 3b: a note bob writes citing alice's memory chunk as a source, once proposed,
    does not show the memory's content in the queue (``proposals list/show``, text and JSON,
    ``diff``, the web page's queue as a reviewer): either the citation is refused (without
    echoing the memory) or the source stays opaque. (pg: a guard, it passes today.)"""
    project.compile({"a.md": DOC_DEPLOY})
    alice, bob = project.token("alice"), project.token("bob")
    carol = project.token("carol", "reviewer")
    with project.server() as url:
        saved = ok(url, alice, "save_memory", {"content": SECRET, "category": "fact",
                                               "scope": "project"})
        [(wrote, note)] = session(url, bob, [("agents_context_write", {
            "content": "See the cited note for the vault.", "kind": "note",
            "confidence": 0.5, "sources": [memory_chunk_id(saved["id"])]})])
        assert SECRET_WORD not in json.dumps(note)
        if wrote:
            ok(url, bob, "agents_context_propose", {"context_id": note["id"]})
        page = web_queue(url, carol)
    assert SECRET_WORD not in page
    queue = project.proposals()
    assert len(queue) == (1 if wrote else 0), queue
    assert SECRET_WORD not in json.dumps(queue), queue
    for p in queue:
        for args in (["--json"], []):
            shown = project.cli("proposals", "show", str(p["proposal_id"]), *args,
                                "--root", str(project.root))
            assert SECRET_WORD not in shown.out, shown.out
    diff = project.cli("diff", "--json", ok=False)
    assert SECRET_WORD not in diff.out + diff.err


# -- 4. pull -> push round trip keeps a team project whole ------------------------------------
def test_d4_a_memory_proposal_survives_pull_and_push(pg_project: Project,
                                                     tmp_path: Path) -> None:
    """Defect 4 (pg only): the issue's round trip. A writer's global-memory proposal on the
    team server, the project pulled and the copy pushed back: no id is both a chunk and a
    memory row, a pull still works, and the queue shows no "(missing)" proposal."""
    project = pg_project
    project.compile({"a.md": DOC_DEPLOY})
    bob = project.token("bob")
    with project.server() as url:
        session(url, bob, [
            ("save_memory", {"content": "Every release needs two reviewers.",
                             "category": "convention", "scope": "global"}),
            ("agents_context_write", {"content": "A delta note.", "kind": "note",
                                      "confidence": 0.6, "scope": "delta"})])
    store = ["--store", str(project.url)]
    copy = tmp_path / "copy"
    copy.mkdir()
    pulled = project.run("pull", *store, "--dir", str(copy))
    assert pulled.code == 0, pulled.err
    # the issue's own round trip is a plain push (defect 9: it adds only what is new), then
    # a reviewer pushing the copy over the base
    plain = project.run("push", *store, "--dir", str(copy))
    assert plain.code == 0, plain.err
    again = project.run("push", *store, "--dir", str(copy), "--replace-base")
    assert again.code == 0, again.err
    with psycopg.connect(str(project.url)) as conn:
        both = conn.execute("SELECT c.id, c.kind FROM chunks c JOIN memories m ON m.id = c.id"
                            ).fetchall()
    assert both == [], f"ids stored both as chunks and as memories: {both}"
    copy2 = tmp_path / "copy2"
    copy2.mkdir()
    second = project.run("pull", *store, "--dir", str(copy2))
    assert second.code == 0, second.err
    listed = project.run("proposals", "list", *store)
    assert listed.code == 0 and "(missing)" not in listed.out, listed.out


# -- 5. a writer's global-memory proposal is reviewable on both backends ----------------------
def test_d5_a_global_memory_proposal_is_in_the_queue(project: Project) -> None:
    """Defect 5 (pg; files is the guard, it passes today): ``save_memory`` with ``scope:
    global`` by a writer is a proposal that ``proposals list`` shows and ``proposals accept``
    accepts, and the web page's queue shows; after that another actor recalls it as a global
    memory."""
    project.compile({"a.md": DOC_DEPLOY})
    bob, alice = project.token("bob"), project.token("alice")
    carol = project.token("carol", "reviewer")
    content = "Every release needs two reviewers."
    with project.server() as url:
        out = ok(url, bob, "save_memory", {"content": content, "category": "convention",
                                           "scope": "global"})
        assert out["status"] == "proposed", out
        queue = project.proposals()
        mine = [p for p in queue if content in json.dumps(p)]
        assert len(mine) == 1, f"the proposal is not in the queue: {queue}"
        assert mine[0]["status"] == "pending"
        assert content in web_queue(url, carol), "the proposal is not on the web page's queue"
        project.cli("proposals", "accept", str(mine[0]["proposal_id"]), "--reviewer", "carol")
        recalled = ok(url, alice, "recall_memories", {"query": "release reviewers",
                                                      "scope": "global"})
    assert content in json.dumps(recalled), recalled


# -- 6. every write, proposal and decision records its actor ----------------------------------
def test_d6_every_write_proposal_and_decision_shows_its_actor(project: Project) -> None:
    """Defect 6: a write and a proposal through MCP over HTTP (alice's token) and over stdio
    (``SEDIMENT_ACTOR=dave``), and the decisions on them (``proposals accept --reviewer
    carol``; ``SEDIMENT_ACTOR=erin``) show their actor in a JSON field ``actor`` beside the
    RFC ``author`` (kept ``mcp`` for the agent's chunk and ``human`` for a decision), in
    ``proposals list --json``, ``proposals show`` (JSON and text), ``diff --json`` and
    ``inspect --id`` (JSON: the chunk's ``actor`` and its events'; text: "propose by
    ACTOR"); on pg ``inspect`` reads a pulled copy."""
    project.compile({"a.md": DOC_DEPLOY})
    alice = project.token("alice")
    note = {"kind": "note", "confidence": 0.6, "scope": "delta"}
    with project.server() as url:
        by_alice = ok(url, alice, "agents_context_write", {
            "content": "Staging deploys need the VPN.", **note})["id"]
        alices = ok(url, alice, "agents_context_propose", {"context_id": by_alice})
    (w, by_dave), (p, daves) = stdio(
        project, "dave", [("agents_context_write", {"content": "Prod deploys need two.",
                                                    **note})],
        then=[("agents_context_propose", {"context_id": "$0"})])
    assert w and p, (by_dave, daves)
    by_dave = by_dave["id"]
    expect = {alices["proposal_id"]: ("alice", by_alice, "carol"),
              daves["proposal_id"]: ("dave", by_dave, "erin")}
    diff = project.cli("diff", "--json").json()  # before the decisions: both still "added"
    added = {a["id"]: a for a in diff["added"]}
    pending = {p["proposal_id"]: p for p in diff["pending_proposals"]}
    for proposal, (actor, written, _) in expect.items():
        assert added[written]["author"] == "mcp"
        assert added[written].get("actor") == actor, f"diff --json: {added[written]}"
        assert pending[proposal].get("actor") == actor, f"diff --json: {pending[proposal]}"
    project.cli("proposals", "accept", str(alices["proposal_id"]), "--reviewer", "carol")
    project.cli("proposals", "accept", str(daves["proposal_id"]),
                env={"SEDIMENT_ACTOR": "erin"})
    listed = {p["proposal_id"]: p for p in project.proposals()}
    layers = project.root
    if project.url:
        layers = project.root / "pulled"
        layers.mkdir()
        assert project.run("pull", "--store", project.url, "--dir", str(layers)).code == 0
    for proposal, (actor, written, reviewer) in expect.items():
        entry = listed[proposal]
        assert entry["chunk"]["author"] == "mcp"
        assert entry.get("actor") == actor, f"proposals list --json: no actor in {entry}"
        shown = project.cli("proposals", "show", str(proposal), "--json").json()
        assert shown.get("actor") == actor, f"proposals show --json: no actor in {shown}"
        [decision] = shown["decisions"]
        assert decision["author"] == "human" and decision.get("actor") == reviewer, decision
        text = project.cli("proposals", "show", str(proposal)).out
        assert re.search(rf"\b{actor}\b", text), text
        seen = project.run("inspect", str(layers / "AGENTS.delta.db"), "--id", str(written),
                           "--json")
        assert seen.code == 0, seen.err
        info = json.loads(seen.out)
        assert info["author"] == "mcp" and info.get("actor") == actor, info
        assert {actor, reviewer} <= set(actors(info["events"])), info["events"]
    plain = project.run("inspect", str(layers / "AGENTS.delta.db"), "--id", str(by_alice))
    assert re.search(r"meta\.proposal_event propose by [^\n]*\balice\b", plain.out), plain.out


# -- 7. the local layer is per actor on the team server ---------------------------------------
def test_d7_a_local_note_is_its_actors_alone_on_the_team_server(pg_project: Project) -> None:
    """Defect 7 (pg): alice's ``scope: local`` write is in her own search and never in
    bob's, through the team server's HTTP transport with each actor's token. The same rule
    holds on the layer files (a local-layer chunk is its writer's alone,
    ``store/rules.py``); ``tests/contract/test_visibility.py`` checks it there on every read
    path."""
    project = pg_project
    project.compile({"a.md": DOC_DEPLOY})
    alice, bob = project.token("alice"), project.token("bob")
    query = {"query": f"{SECRET_WORD} deploy branch"}
    with project.server() as url:
        [(_, wrote), (_, mine)] = session(url, alice, [
            ("agents_context_write", {"content": f"My {SECRET_WORD} scratch note: deploy "
                                      "from branch wip-42.", "kind": "note",
                                      "confidence": 0.5, "scope": "local"}),
            ("agents_search", query)])
        theirs = ok(url, bob, "agents_search", query)
    assert SECRET_WORD in json.dumps(mine["results"]), (wrote, mine)
    assert SECRET_WORD not in json.dumps(theirs["results"]), theirs  # (the query echoes it)


def test_another_actors_local_notes_take_no_candidate_slot(project: Project) -> None:
    """A search takes each layer's best candidates, then leaves hidden ids out. Another
    actor's local notes used to fill those slots and vanish after, so bob's own note,
    which ranks below alice's 60 notes on the same word, was missing from his search on
    both backends. Hidden chunks now take no slot (``LayerIndex.search_mask``;
    ``pg/search.py``'s ``_excluding``)."""
    project.compile({"a.md": DOC_BILLING})
    alice, bob = project.token("alice"), project.token("bob")
    note = {"kind": "note", "confidence": 0.5, "scope": "local"}
    with project.server() as url:
        written = session(url, alice, [
            ("agents_context_write", {**note, "content": f"Deploy deploy deploy: step {i}."})
            for i in range(60)])
        assert all(good for good, _ in written), written[:3]
        [(_, wrote), (_, found)] = session(url, bob, [
            ("agents_context_write", {**note, "content": "The deploy checklist is kept in "
                                                         "the team wiki, beside the runbooks."}),
            ("agents_search", {"query": "deploy", "k": 5, "layers": ["local"]})])
    assert [r["id"] for r in found["results"]] == [wrote["id"]], found


# -- 8. both backends rank alike, memories and context present --------------------------------
PARITY_DOCS = {
    "deploy.md": DOC_DEPLOY,
    "billing.md": DOC_BILLING,
    "layers.md": DOC_LAYERS,
    "review.md": ("# Review\n\nA reviewer accepts a proposal, which copies the chunk into "
                  "the user layer; the deploy review happens on Mondays.\n"),
    "search.md": ("# Search\n\nSearch fuses vector similarity with BM25 keyword scores; "
                  "deploy notes and billing notes rank by both.\n"),
}
PARITY_QUERIES = ["deploy notes staging reviewers", "billing X-Account review proposal user"]


def _fill_for_parity(project: Project, *, with_memories: bool) -> None:
    """A directory with what the stores hold: a compiled base, a delta write, two local
    notes proposed (proposals, their copies in delta), one accepted (a decision, a user
    chunk); ``with_memories`` adds alice's project and global memories (one project memory
    corrected by a later save) and progressive context items."""
    project.compile(PARITY_DOCS)
    note = {"kind": "note", "confidence": 0.5}
    calls: list[Call] = [
        ("agents_context_write", {"content": "Deploy notes: the staging deploy needs the "
                                  "VPN and two reviewers.", "scope": "delta", **note}),
        ("agents_context_write", {"content": "Billing notes: the X-Account header is "
                                  "checked by the gateway.", **note}),
        ("agents_context_write", {"content": "Review notes: deploy reviews on Monday.",
                                  **note})]
    if with_memories:
        calls += [("save_memory", {"content": text, "category": "convention", "scope": scope})
                  for scope, text in (
                      ("project", "Deploy reviews: alice reviews every staging deploy."),
                      ("project", "Billing deploy: check the X-Account header first."),
                      ("global", "Every release deploy needs two reviewers and a note."),
                      ("global", "Search notes rank BM25 keyword scores with vectors."))]
        # a correction supersedes the billing memory: a meta.supersede event, which sits
        # in the local layer on files and in the memories table on PostgreSQL
        calls += [("save_memory", {"content": "Billing deploy: check the X-Account header "
                                   "second, not first.", "category": "correction",
                                   "scope": "project"})]
        calls += [("store_context", {"content": text, "context_type": "task"})
                  for text in ("Deploy task: move the billing containers to staging.",
                               "Skill: review a proposal by reading its user layer.")]
    got = stdio(project, "alice", calls, then=[("agents_context_propose", {"context_id": "$1"}),
                                               ("agents_context_propose", {"context_id": "$2"})])
    assert all(good for good, _ in got), got
    project.cli("proposals", "accept", str(got[-1][1]["proposal_id"]), "--reviewer", "carol")


def _ranking(run: Runner, where: list[str]) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
    out = {}
    for mode in ("vector", "lexical", "hybrid"):
        for query in PARITY_QUERIES:
            r = run("search", query, "--mode", mode, "-k", "50", "--json", *where)
            assert r.code == 0, r.err
            out[mode, query] = [(h["layer"], h["id"], h["kind"], h["score"])
                                for h in r.json()["results"]]
    return out


@pytest.mark.parametrize("with_memories", [False, True], ids=["layers", "memories"])
def test_d8_both_backends_rank_alike(tmp_path: Path, sediment: Runner, pg_url: str,
                                     with_memories: bool,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 8: the same content searched (``sediment search --json``) on files and on the
    PostgreSQL project it was pushed to gives the same layers, ids and kinds in the same
    order, scores within 1e-5, in vector, lexical and hybrid mode. ``layers`` (base, delta,
    local, user, proposals and a decision; no memories) passes today; ``memories`` (project
    and global memories, context items pushed with ``--context``) pins the defect, and its
    correcting save pins its second form: the ``meta.supersede`` it writes sits in the
    local layer on files and in the memories table on PostgreSQL."""
    monkeypatch.setenv("SEDIMENT_MEMORY_FLUSH_SECONDS", "3600")
    files = Project("files", tmp_path / "src", sediment)
    files.root.mkdir()
    _fill_for_parity(files, with_memories=with_memories)
    extra = ["--context", "--actor", "alice"] if with_memories else []
    pushed = sediment("push", "--store", pg_url, "--dir", str(files.root), *extra)
    assert pushed.code == 0, pushed.err
    on_files = _ranking(sediment, files.where)
    on_pg = _ranking(sediment, ["--store", pg_url])
    for key, a in on_files.items():
        b = on_pg[key]
        assert [x[:3] for x in a] == [x[:3] for x in b], (key, a, b)
        assert all(abs(x[3] - y[3]) <= 1e-5 for x, y in zip(a, b, strict=True)), (key, a, b)


# -- 9. push adds only what is new; a failed pull writes nothing -------------------------------
def _pushed_twice_ready(project: Project) -> None:
    project.compile({"a.md": DOC_DEPLOY, "b.md": DOC_BILLING}, push=False)
    for scope in ("delta", "local"):
        r = project.run("write", "--dir", str(project.root), "--scope", scope, "--kind",
                        "note", "--content", f"A {scope} note.", "--confidence", "0.6")
        assert r.code == 0, r.err
    first = project.run("push", "--store", str(project.url), "--dir", str(project.root))
    assert first.code == 0, first.err


def test_d9_pushing_an_unchanged_directory_again_adds_nothing(pg_project: Project) -> None:
    """Defect 9a (pg only): a second push of the same directory succeeds and changes no row
    (push is documented to add only what is new)."""
    project = pg_project
    _pushed_twice_ready(project)

    def rows() -> list[Any]:
        with psycopg.connect(str(project.url)) as conn:
            return conn.execute("SELECT layer, id, content FROM chunks ORDER BY 1, 2"
                                ).fetchall()
    before = rows()
    again = project.run("push", "--store", str(project.url), "--dir", str(project.root))
    assert again.code == 0, f"re-push refused: {again.err}"
    assert rows() == before


def test_d9_a_failed_pull_leaves_nothing_behind(pg_project: Project, tmp_path: Path) -> None:
    """Defect 9b (pg only): a pull that fails (from a project that does not exist: a guard;
    with a layer file that cannot be written, here ``AGENTS.db`` being a directory) leaves
    the target directory as it was, with no layer file written, and says why in one line."""
    project = pg_project
    _pushed_twice_ready(project)
    empty = tmp_path / "empty"
    empty.mkdir()
    nope = project.run("pull", "--store", str(project.url), "--project", "nope", "--dir",
                       str(empty))
    assert nope.code == 1 and "nope" in nope.err
    assert list(empty.iterdir()) == []
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "AGENTS.db").mkdir()
    failed = project.run("pull", "--store", str(project.url), "--dir", str(blocked), "--force")
    left = sorted(p.name for p in blocked.iterdir())
    assert failed.code == 1 and "Traceback" not in failed.err, failed.err
    assert left == ["AGENTS.db"], f"a failed pull left {left}"


# -- the id rules ------------------------------------------------------------------------------
def test_every_written_id_is_above_the_compiled_range_and_unique(project: Project) -> None:
    """Every id written at run time (memories and memory proposals saved first, then writes,
    a proposal, a decision) is >= 2^31 and none repeats, on both backends; compiled ids stay
    below 2^31. On files today a project memory saved before any write takes ``high_water +
    1``, a compiled-range id (the root of defect 1)."""
    project.compile({"a.md": DOC_DEPLOY, "b.md": DOC_BILLING})
    note = {"kind": "note", "confidence": 0.5}
    got = stdio(project, "alice", [
        ("save_memory", {"content": "A project memory.", "category": "fact",
                         "scope": "project"}),
        ("save_memory", {"content": "A global memory.", "category": "fact",
                         "scope": "global"}),
        ("agents_context_write", {"content": "A local note.", **note}),
        ("agents_context_write", {"content": "A delta note.", "scope": "delta", **note})],
        then=[("agents_context_propose", {"context_id": "$2"})])
    assert all(good for good, _ in got), got
    ids = [int(got[0][1]["chunk_id"]), int(got[1][1]["chunk_id"]),
           got[2][1]["id"], got[3][1]["id"], got[4][1]["proposal_id"]]
    decided = project.cli("proposals", "accept", str(ids[-1]), "--reviewer", "carol",
                          "--json").json()
    ids += [int(x) for x in re.findall(r'"decision(?:_id)?":\s*(\d+)', json.dumps(decided))]
    assert len(ids) == 6, (ids, decided)
    assert all(i >= WRITTEN_START for i in ids), ids
    assert len(set(ids)) == len(ids), ids
    base = project.cli("search", "deploy billing", "--layers", "base", "--json").json()
    assert base["results"] and all(h["id"] < WRITTEN_START for h in base["results"])

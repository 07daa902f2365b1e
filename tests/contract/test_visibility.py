"""Per-actor visibility (issue #25) where it is easiest to lose: after a recompile, across
push and pull, through a persona, on the web page and the HTTP API, and in an export.

alice keeps four private things: a project memory, a user memory, a ``scope: local`` note and
a progressive-context item, each with its own marker word; bob and carol (a reviewer) then
try every read path a real server offers (``sediment serve --transport http`` over the layer
files, ``files``, or over a PostgreSQL project, ``pg``) after the project was compiled again
with a new document. No marker ever reaches them; alice still reads all of hers.

One project and one server per backend are shared by the whole module (module scope): the
tests only read, so they cannot disturb each other, and the suite stays fast.
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
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

import sediment
from mcp import Client
from sediment.errors import ValidationError
from tests.conftest import Run, run_sediment
from tests.pg.conftest import fresh_database
from tests.pg.team import TeamServer, serve_http

pytestmark = pytest.mark.timeout(600)

TIMEOUT = 180
DOC_DEPLOY = "# Deploy\n\nThe deploy job pushes containers to staging every night.\n"
DOC_BILLING = "# Billing\n\nBilling requests MUST carry the X-Account header.\n"
MARKERS = {
    "project memory": "zanzibar",
    "user memory": "xylophone",
    "local note": "quokka",
    "context item": "marzipan",
}
"""One word per private thing of alice's: any of them in what another actor reads is a leak
(and says which kind leaked)."""
CORRECTED = "Alice's project note: the zanzibar vault code is 4712, not 4711."
"""alice's correction of her project memory (a save that supersedes it)."""
SECRETS = {
    "project memory": "Alice's project note: the zanzibar vault code is 4711.",
    "user memory": "Alice prefers the xylophone theme in every editor.",
    "local note": "Alice's scratch note: the quokka branch deploys from wip-42.",
    "context item": "Alice's task: move the marzipan tables to staging.",
}
PERSONA = """agent = {}
agent.name = "peek"
agent.description = "Reads what the store lets its caller read"
agent.tools = { "search", "get", "sources" }
agent.arguments = {
  { name = "query", description = "what to search", required = true },
  { name = "ids", description = "comma-separated chunk ids to get", required = false },
}
function agent.resolve(args, config, context)
  local parts = {}
  for _, mode in ipairs({ "hybrid", "lexical" }) do
    for _, hit in ipairs(context.search({ query = args.query, k = 50, mode = mode })) do
      table.insert(parts, hit.content)
    end
  end
  for id in string.gmatch(args.ids or "", "%d+") do
    local doc = context.get(tonumber(id))
    if doc ~= nil then table.insert(parts, doc.content .. " " .. (doc.body or "")) end
  end
  for _, layer in ipairs(context.sources()) do
    table.insert(parts, layer.name .. ":" .. tostring(layer.chunks))
  end
  return { system = table.concat(parts, "\\n") }
end
return agent
"""


def answer(obj: Any) -> str:
    """A tool's answer as JSON without the query it echoes (which holds alice's words)."""
    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k != "query"}
        return [strip(v) for v in x] if isinstance(x, list) else x
    return json.dumps(strip(obj))


def leaked(text: str) -> list[str]:
    """Which of alice's private things ``text`` shows."""
    low = text.lower()
    return [what for what, word in MARKERS.items() if word in low]


# -- one project per backend, with a server, for the whole module -----------------------------
@dataclass
class World:
    backend: str
    root: Path
    env: dict[str, str]
    url: str | None
    server: TeamServer
    tokens: dict[str, str]
    ids: dict[str, Any] = field(default_factory=dict)
    """alice's things: ``local`` (the note's chunk id), ``memories`` (their ids, ``p``/``u``),
    ``memory_chunks`` (their chunk ids), ``context`` (the item's id)."""

    @property
    def where(self) -> list[str]:
        return ["--store", self.url] if self.url else ["--dir", str(self.root)]

    def run(self, *args: str, env: dict[str, str] | None = None) -> Run:
        return run_sediment(*args, cwd=self.root, env={**self.env, **(env or {})},
                            timeout=TIMEOUT)

    def cli(self, *args: str, env: dict[str, str] | None = None) -> Run:
        r = self.run(*args, env=env)
        assert r.code == 0, (args, r.out, r.err)
        return r

    def api(self, actor: str, tool: str, args: dict[str, Any]) -> httpx.Response:
        """``POST /tools/TOOL`` as ``actor`` (their bearer token)."""
        return httpx.post(f"{self.server.base}/tools/{tool}", json=args, timeout=TIMEOUT,
                          headers={"Authorization": f"Bearer {self.tokens[actor]}"})

    def ok(self, actor: str, tool: str, args: dict[str, Any]) -> Any:
        r = self.api(actor, tool, args)
        assert r.status_code == 200, (tool, args, r.text)
        return r.json()["result"]


def _env(home: Path) -> dict[str, str]:
    """The environment every command of the module runs in (the autouse isolation fixture is
    per test; this project outlives one test)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEDIMENT_", "OPENAI_"))}
    env.update(SEDIMENT_USER_CONFIG=str(home / "config.toml"),
               SEDIMENT_CACHE_DIR=str(home / "cache"), SEDIMENT_DATA_DIR=str(home / "data"),
               SEDIMENT_EMBEDDER="hash", SEDIMENT_MEMORY_FLUSH_SECONDS="3600")
    return env


@pytest.fixture(scope="module")
def pg_module_url(pg_server: str) -> Iterator[str]:
    """A fresh, migrated database for the whole module."""
    with fresh_database(pg_server, "vis") as url:
        yield url


def _compile(w: World, docs: dict[str, str], first: bool) -> None:
    for name, text in docs.items():
        (w.root / "docs" / name).write_text(text)
    w.cli("compile", "--root", str(w.root), "--include", "docs/*.md", "--out",
          str(w.root / "AGENTS.db"), "-q")
    if w.url:
        w.cli("push", "--store", w.url, "--dir", str(w.root),
              *([] if first else ["--replace-base"]))


def _alice_keeps_her_things(w: World) -> None:
    """Through the first server: alice saves, writes and stores; bob cites her note."""
    got: dict[str, Any] = {"memories": {}, "memory_chunks": {}}
    for what, scope in (("project memory", "project"), ("user memory", "user")):
        out = w.ok("alice", "save_memory", {"content": SECRETS[what], "category": "fact",
                                            "scope": scope})
        got["memories"][what], got["memory_chunks"][what] = out["id"], int(out["chunk_id"])
    # a correction supersedes the project memory: on the layer files its events (the save,
    # the meta.supersede naming what changed) sit in the local layer beside alice's note
    fixed = w.ok("alice", "save_memory", {"content": CORRECTED, "category": "correction",
                                          "scope": "project"})
    assert fixed["status"] == "updated", fixed
    got["superseded"] = got["memory_chunks"]["project memory"]
    got["memories"]["project memory"] = fixed["id"]
    got["memory_chunks"]["project memory"] = int(fixed["chunk_id"])
    got["local"] = w.ok("alice", "agents_context_write", {
        "content": SECRETS["local note"], "kind": "note", "confidence": 0.5,
        "scope": "local"})["id"]
    got["context"] = w.ok("alice", "store_context", {"content": SECRETS["context item"],
                                                     "context_type": "task"})["id"]
    # alice proposes a note citing her own local note: the queue shows others that source
    # opaque (never its content)
    citing = w.ok("alice", "agents_context_write", {
        "content": "The branch to deploy from is in my scratch note.", "kind": "note",
        "confidence": 0.5, "scope": "delta", "sources": [got["local"]]})["id"]
    w.ok("alice", "agents_context_propose", {"context_id": citing})
    # bob cites her note and her memory; if that is accepted, the queue must stay opaque
    cited = w.api("bob", "agents_context_write", {
        "content": "See the cited notes for the branch.", "kind": "note", "confidence": 0.5,
        "scope": "local", "sources": [got["local"], *got["memory_chunks"].values()]})
    assert not leaked(cited.text), cited.text
    if cited.status_code == 200:
        w.ok("bob", "agents_context_propose", {"context_id": cited.json()["result"]["id"]})
    w.ok("bob", "agents_context_propose", {"context_id": w.ok("bob", "agents_context_write", {
        "content": "Deploys need the VPN.", "kind": "note", "confidence": 0.5,
        "scope": "local"})["id"]})
    w.ids = got


@contextmanager
def _world(backend: str, home: Path, url: str | None) -> Iterator[World]:
    """A project compiled, alice's private things saved through a server, the project
    compiled again with a new document (on pg pushed with ``--replace-base``), and a new
    server over it, with a Lua persona configured."""
    root = home / "project"
    (root / "docs").mkdir(parents=True)
    (root / "agents").mkdir()
    (root / "agents" / "peek.lua").write_text(PERSONA)
    (root / "sediment.toml").write_text(
        '[agents.script.peek]\npath = "agents/peek.lua"\ntimeout = 30\n')
    env = _env(home)
    where = ["--store", url] if url else ["--dir", str(root)]
    w = World(backend, root, env, url, server=None, tokens={})  # type: ignore[arg-type]
    _compile(w, {"a.md": DOC_DEPLOY}, first=True)
    for actor, role in (("alice", "writer"), ("bob", "writer"), ("carol", "reviewer")):
        on = ["--store", url] if url else []
        w.tokens[actor] = w.cli("token", "create", "--actor", actor, "--role", role,
                                "--json", *on).json()["token"]
    with serve_http(where, root, env, start_s=TIMEOUT) as first:
        w.server = first
        _alice_keeps_her_things(w)
    _compile(w, {"b.md": DOC_BILLING}, first=False)
    with serve_http(where, root, env, start_s=TIMEOUT) as second:
        w.server = second
        yield w


@pytest.fixture(scope="module")
def files_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with _world("files", tmp_path_factory.mktemp("visibility"), None) as w:
        yield w


@pytest.fixture(scope="module")
def pg_world(tmp_path_factory: pytest.TempPathFactory, pg_module_url: str) -> Iterator[World]:
    with _world("pg", tmp_path_factory.mktemp("visibility"), pg_module_url) as w:
        yield w


@pytest.fixture(scope="module", params=["files", "pg"])
def world(request: pytest.FixtureRequest) -> World:
    """The project of each backend (built once per module: the push test reuses the
    files one)."""
    got: World = request.getfixturevalue(f"{request.param}_world")
    return got


# -- helpers: what an actor reads ------------------------------------------------------------
QUERIES = [SECRETS[k] for k in MARKERS] + [" ".join(MARKERS.values())]


def _searches(w: World, actor: str) -> str:
    """Everything ``agents_search`` shows ``actor`` for alice's words, in every layer and in
    the local layer alone."""
    out = []
    for query in QUERIES:
        for extra in ({}, {"layers": ["local"]}):
            out.append(w.ok(actor, "agents_search", {"query": query, "k": 50, **extra}))
    return json.dumps([r["results"] for r in out])


def _mcp_resources(w: World, actor: str, uris: list[str]) -> list[str]:
    """``resources/read`` of each URI in one MCP session as ``actor``: the text, or the
    error's message."""
    async def main() -> list[str]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {w.tokens[actor]}"})
        out = []
        with anyio.fail_after(TIMEOUT):
            async with http, Client(streamable_http_client(f"{w.server.base}/mcp",
                                                           http_client=http)) as c:
                for uri in uris:
                    try:
                        r = await c.read_resource(uri)
                        out.append(json.dumps([getattr(x, "text", "") for x in r.contents]))
                    except Exception as exc:  # an error is an answer here
                        out.append(f"error: {exc}")
                prompt = await c.get_prompt("peek", {"query": QUERIES[-1],
                                                     "ids": _ids_arg(w)})
                out.append(json.dumps(prompt.model_dump(mode="json")))
        return out
    return anyio.run(main)


def _alices_chunk_ids(w: World) -> list[int]:
    return [int(w.ids["local"]), *w.ids["memory_chunks"].values(), int(w.ids["superseded"])]


def _ids_arg(w: World) -> str:
    return ",".join(str(i) for i in _alices_chunk_ids(w))


def results(page: str) -> str:
    """The search page below its forms (the query form echoes the query)."""
    return page.rsplit("</form>", 1)[-1]


def _sign_in(w: World, actor: str) -> httpx.Client:
    c = httpx.Client(base_url=w.server.base, timeout=TIMEOUT, follow_redirects=False)
    page = c.get("/ui/login")
    nonce = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert nonce, page.text
    signed = c.post("/ui/login", data={"csrf": nonce.group(1), "token": w.tokens[actor],
                                       "reviewer": "ignored"},
                    headers={"Origin": w.server.base})
    assert signed.status_code == 303, signed.text
    return c


# -- the tests ------------------------------------------------------------------------------
def test_after_a_recompile_bob_reads_none_of_alices_private_things(world: World) -> None:
    """Every tool path of the HTTP API as bob, after the recompile: search (every layer, the
    local layer alone), get of each of alice's chunk ids, proposing her note, sources,
    recall and list of memories in every scope, relevant context (archive included) and its
    stats; and the MCP chunk resources of her ids."""
    w = world
    said = [_searches(w, "bob")]
    for chunk_id in _alices_chunk_ids(w):
        said.append(w.api("bob", "agents_get", {"id": chunk_id}).text)
        said.append(w.api("bob", "agents_context_propose", {"context_id": chunk_id}).text)
    said.append(json.dumps(w.ok("bob", "agents_sources", {})))
    for scope in (None, "user", "project", "global"):
        for query in QUERIES:
            args = {"query": query, "limit": 50, "min_score": 0.0}
            said.append(answer(w.ok("bob", "recall_memories",
                                        {**args, **({"scope": scope} if scope else {})})))
    said.append(json.dumps(w.ok("bob", "manage_memory", {"action": "list", "limit": 1000})))
    for what in ("project memory", "user memory"):
        said.append(w.api("bob", "manage_memory", {"action": "history",
                                                   "memory_id": w.ids["memories"][what]}).text)
    for query in QUERIES:
        said.append(answer(w.ok("bob", "get_relevant_context", {
            "query": query, "max_items": 50, "min_score": 0.0, "include_archived": True,
            "max_tokens": 4000})))
    said.append(json.dumps(w.ok("bob", "get_context_stats", {})))
    uris = [f"agentsdb://chunks/{i}" for i in _alices_chunk_ids(w)]
    uris += [f"agentsdb://layers/local/chunks/{i}" for i in _alices_chunk_ids(w)]
    said += _mcp_resources(w, "bob", uris)
    for text in said:
        assert not leaked(text), f"bob read alice's {leaked(text)}: {text[:2000]}"


def test_after_a_recompile_alice_still_reads_hers(world: World) -> None:
    """The same paths as alice find each of her things (so the test above can fail), and
    the recompile's new document is searchable by everyone."""
    w = world
    assert set(leaked(_searches(w, "alice"))) == {"local note"}
    assert leaked(w.api("alice", "agents_get", {"id": int(w.ids["local"])}).text) == [
        "local note"]
    recalled = answer([w.ok("alice", "recall_memories", {
        "query": q, "limit": 50, "min_score": 0.0}) for q in QUERIES])
    assert set(leaked(recalled)) == {"project memory", "user memory"}
    relevant = answer(w.ok("alice", "get_relevant_context", {
        "query": SECRETS["context item"], "max_items": 50, "min_score": 0.0}))
    assert leaked(relevant) == ["context item"]
    found = w.ok("bob", "agents_search", {"query": "billing X-Account header"})
    assert any("X-Account" in h["content"] for h in found["results"]), found
    got = _mcp_resources(w, "alice", [f"agentsdb://chunks/{w.ids['local']}"])
    assert leaked(got[0]) == ["local note"] and leaked(got[1]) == ["local note"], got


def test_a_persona_reads_only_its_callers_private_things(world: World) -> None:
    """The Lua persona ``peek`` (search in two modes, get of alice's ids, sources), rendered
    over the HTTP API and over MCP ``prompts/get``, as bob shows none of alice's things and
    as alice shows her note (a persona reads what its caller may, memories never)."""
    w = world
    args = {"arguments": {"query": QUERIES[-1], "ids": _ids_arg(w)}}

    def render(actor: str) -> str:
        r = httpx.post(f"{w.server.base}/agents/peek/prompt", json=args, timeout=TIMEOUT,
                       headers={"Authorization": f"Bearer {w.tokens[actor]}"})
        assert r.status_code == 200, r.text
        return r.text

    bobs = render("bob")
    assert not leaked(bobs), bobs
    assert leaked(render("alice")) == ["local note"]
    over_mcp = _mcp_resources(w, "bob", [])[-1]
    assert over_mcp, "bob read no resource text over MCP"
    assert not leaked(over_mcp), over_mcp
    assert leaked(_mcp_resources(w, "alice", [])[-1]) == ["local note"]


def test_a_memory_kind_filter_is_refused_on_every_path(world: World) -> None:
    """A search naming a memory kind is refused on every path, whoever asks (even for the
    asker's own kind: memories are read with recall_memories, and the team server's
    project memories are in no layer a search reads): the Python API, which gave bob
    alice's project memory on the layer files, the CLI, and ``agents_search`` over HTTP."""
    w = world
    where = w.url or str(w.root)
    said: list[str] = []
    refused: list[bool] = []
    for actor in ("bob", "alice"):
        for kinds in (["memory.fact.alice"], ["memory.correction.alice", "note"]):
            r = w.api(actor, "agents_search", {"query": QUERIES[0], "k": 50,
                                               "filters": {"kind": kinds}})
            said.append(r.text if actor == "bob" else "")
            refused.append(r.status_code == 400 and "memories are private" in r.text)
            with sediment.open(where, actor=actor, embedder="hash") as store:
                try:
                    hits = store.search(QUERIES[0], kinds=kinds, mode="lexical", k=50)
                except ValidationError as exc:
                    refused.append("memories are private" in str(exc) and kinds[0] in str(exc))
                else:
                    if actor == "bob":
                        said.append(json.dumps([h.chunk.content for h in hits]))
                    refused.append(False)
    cli = w.run("search", QUERIES[0], "--kind", "memory.fact.alice", "--json", *w.where)
    said.append(cli.out)
    refused.append(cli.code != 0 and "memory.fact.alice" in cli.err)
    for text in said:
        assert not leaked(text), f"a memory kind filter shows {leaked(text)}: {text[:2000]}"
    assert all(refused), (refused, said)


EVENT_KINDS = ["meta.write", "meta.memory", "meta.supersede", "meta.forget",
               "meta.memory_context", "meta.memory_use"]
EVENT_QUERY = "alice write local memory save supersede correction handle"


def _private_events(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The hits that are events in the local layer naming alice (hers alone to read)."""
    return [h for h in hits if h["layer"] == "local" and h["kind"].startswith("meta.")
            and '"alice"' in h["content"]]


def test_no_search_shows_bob_the_events_of_alices_private_things(world: World) -> None:
    """Events about alice's private things (the ``meta.write`` naming her local note; on
    the layer files her memory's save and the ``meta.supersede`` of her correction, which
    name its handle and the words it changed) are as private as the things: bob finds none
    of them by kind (``agents_search`` over HTTP, the Python API) nor with
    ``include_meta``; alice finds hers."""
    w = world
    where = w.url or str(w.root)
    seen: dict[str, list[dict[str, Any]]] = {}
    for actor in ("bob", "alice"):
        by_kind = w.ok(actor, "agents_search", {"query": EVENT_QUERY, "k": 50,
                                                "filters": {"kind": EVENT_KINDS}})
        hits = list(by_kind["results"])
        with sediment.open(where, actor=actor, embedder="hash") as store:
            for found in (store.search(EVENT_QUERY, kinds=EVENT_KINDS, mode="lexical", k=50),
                          store.search(EVENT_QUERY, include_meta=True, mode="lexical",
                                       k=50)):
                hits += [{"layer": h.layer.value, **h.chunk.to_dict()} for h in found]
        seen[actor] = _private_events(hits)
    assert not seen["bob"], f"bob reads alice's events: {seen['bob']}"
    kinds = {h["kind"] for h in seen["alice"]}
    assert "meta.write" in kinds, seen["alice"]
    if w.backend == "files":  # on pg her memories' events live in the memories table
        assert {"meta.memory", "meta.supersede"} <= kinds, seen["alice"]


def test_the_queue_shows_no_private_thing(world: World) -> None:
    """The review queue, where alice's proposal citing her local note and bob's proposals
    (one citing alice's note and memories, if that write was accepted) wait: ``proposals
    list/show`` (JSON and text) and ``diff``, run by the machine's owner, who reads local
    notes but never a memory or a context item; and the web page's queue and each
    proposal's page as carol (a reviewer) and bob, who read none of alice's things."""
    w = world
    listed = w.cli("proposals", "list", "--json", *w.where)
    queue = listed.json()
    assert queue, "bob's proposals are not in the queue"
    said = [listed.out, w.cli("proposals", "list", *w.where).out]
    for p in queue:
        for extra in (["--json"], []):
            said.append(w.cli("proposals", "show", str(p["proposal_id"]), *extra, *w.where,
                              "--root", str(w.root)).out)
    diff = w.run("diff", "--json", *w.where)
    said.append(diff.out + diff.err)
    for text in said:  # the machine's owner, who reads every local note, never a memory
        assert set(leaked(text)) <= {"local note"}, f"the CLI queue shows {leaked(text)}"
    said = []
    for actor in ("carol", "bob"):
        c = _sign_in(w, actor)
        try:
            said.append(c.get("/ui/queue").text)
            for p in queue:
                page = c.get(f"/ui/proposals/{p['proposal_id']}")
                assert page.status_code == 200, page.text
                said.append(page.text)
        finally:
            c.close()
    for text in said:
        assert not leaked(text), f"the queue shows alice's {leaked(text)}: {text[:2000]}"


def test_the_web_pages_show_bob_none_of_alices(world: World) -> None:
    """Signed in on the web page, bob's memories, context, search and layers pages, and
    alice's memory pages by their ids, show nothing of alice's; alice's own pages show
    her memories and her context item."""
    w = world
    bob = _sign_in(w, "bob")
    try:
        said = [bob.get("/ui/memories").text, bob.get("/ui/context").text,
                bob.get("/ui/layers").text]
        for query in QUERIES:
            for mode in ("hybrid", "lexical", "vector"):
                said.append(results(bob.get("/ui/search", params={"q": query,
                                                                   "mode": mode}).text))
        for ref in w.ids["memories"].values():
            page = bob.get(f"/ui/memories/{ref}")
            assert page.status_code == 404 or not leaked(page.text), page.text
            said.append(page.text)
    finally:
        bob.close()
    for text in said:
        assert not leaked(text), f"bob's page shows alice's {leaked(text)}: {text[-3000:]}"
    alice = _sign_in(w, "alice")
    try:
        assert set(leaked(alice.get("/ui/memories").text)) == {"project memory",
                                                               "user memory"}
        assert leaked(alice.get("/ui/context").text) == ["context item"]
        mine = alice.get("/ui/search", params={"q": SECRETS["local note"], "mode": "lexical"})
        assert leaked(results(mine.text)) == ["local note"], mine.text
    finally:
        alice.close()


def test_an_export_as_bob_holds_none_of_alices(world: World, tmp_path: Path) -> None:
    """``sediment export --to mem0 --actor bob --scope all`` holds nothing of alice's; as
    alice it holds both her memories."""
    w = world
    for fmt in ("mem0",):
        for actor in ("bob", "alice"):
            out = tmp_path / f"{fmt}-{actor}"
            w.cli("export", "--to", fmt, "--actor", actor, "--scope", "all", "--out",
                  str(out), *w.where)
            text = out.read_text() if out.is_file() else "\n".join(
                p.read_text() for p in sorted(out.rglob("*")) if p.is_file())
            expect = [] if actor == "bob" else ["project memory", "user memory"]
            assert sorted(leaked(text)) == expect, (fmt, actor, text[:2000])


# -- push to a team server, pull back, push again ---------------------------------------------
def _bob_reads_nothing_of_alices(w: World) -> None:
    said = [_searches(w, "bob")]
    for query in QUERIES:
        said.append(answer(w.ok("bob", "recall_memories", {"query": query, "limit": 50,
                                                           "min_score": 0.0})))
        said.append(answer(w.ok("bob", "get_relevant_context", {
            "query": query, "max_items": 50, "min_score": 0.0, "include_archived": True})))
    said.append(json.dumps(w.ok("bob", "manage_memory", {"action": "list", "limit": 1000})))
    bob = _sign_in(w, "bob")
    try:
        said += [bob.get("/ui/memories").text, bob.get("/ui/context").text,
                 bob.get("/ui/queue").text,
                 results(bob.get("/ui/search", params={"q": QUERIES[-1]}).text)]
    finally:
        bob.close()
    for text in said:
        assert not leaked(text), f"bob read alice's {leaked(text)}: {text[:2000]}"


def _alice_reads_hers(w: World, memories: set[str]) -> None:
    assert leaked(answer(w.ok("alice", "agents_search", {"query": SECRETS["local note"],
                                                         "k": 50})["results"])) == [
        "local note"]
    recalled = answer([w.ok("alice", "recall_memories", {"query": q, "limit": 50,
                                                         "min_score": 0.0}) for q in QUERIES])
    assert set(leaked(recalled)) == memories, recalled
    relevant = answer(w.ok("alice", "get_relevant_context", {
        "query": SECRETS["context item"], "max_items": 50, "min_score": 0.0}))
    assert leaked(relevant) == ["context item"], relevant


def test_push_pull_and_push_again_keep_alices_things_hers(files_world: World, pg_url: str,
                                                          tmp_path: Path) -> None:
    """The files project (alice's project memory and local note in its local layer, her
    context item in its context store, her user memory in the data directory) pushed to a
    team server, as alice with ``--context --user-memories`` and as bob with ``--context``
    (the directory's context store held only alice's item: bob's push must move none of
    it); then, on a server over that project, bob reads none of alice's things (API, web
    page, queue, export) and alice reads all of hers. Pulled back as alice and bob (the
    Python API over each copy as bob reads none of hers), and the copy pushed again: still
    nothing of alice's for bob."""
    w = files_world
    store = ["--store", pg_url]
    w.cli("push", *store, "--dir", str(w.root), "--context", "--user-memories",
          "--actor", "alice")
    w.cli("push", *store, "--dir", str(w.root), "--context", "--actor", "bob")
    team = World("pg", w.root, w.env, pg_url, w.server, {}, w.ids)
    for actor, role in (("alice", "writer"), ("bob", "writer"), ("carol", "reviewer")):
        team.tokens[actor] = team.cli("token", "create", "--actor", actor, "--role", role,
                                      "--json", *store).json()["token"]
    export = tmp_path / "bob.json"
    team.cli("export", "--to", "mem0", "--actor", "bob", "--scope", "all", "--out",
             str(export), *store)
    assert not leaked(export.read_text()), export.read_text()
    queue = team.cli("proposals", "list", "--json", *store).out
    assert not leaked(queue), queue
    with serve_http(store, w.root, w.env, start_s=TIMEOUT) as srv:
        team.server = srv
        _bob_reads_nothing_of_alices(team)
        _alice_reads_hers(team, {"project memory", "user memory"})
        copies = {}
        for actor in ("alice", "bob"):
            copies[actor] = tmp_path / f"copy-{actor}"
            copies[actor].mkdir()
            team.cli("pull", *store, "--dir", str(copies[actor]), "--context", "--actor",
                     actor)
        for actor, copy in copies.items():
            with sediment.open(copy, actor="bob", embedder="hash") as as_bob:
                hits = [h.chunk.content for q in QUERIES for h in as_bob.search(q, k=50)]
                got = [as_bob.get(i) for i in _alices_chunk_ids(w)]
                relevant = as_bob.relevant_context(QUERIES[-1], max_items=50, min_score=0.0)
                said = json.dumps([hits, [g.content for g in got if g is not None],
                                   json.loads(answer(relevant))])
            assert not leaked(said), f"the copy pulled as {actor} shows bob {leaked(said)}"
        team.cli("push", *store, "--dir", str(copies["alice"]))
        _bob_reads_nothing_of_alices(team)
        _alice_reads_hers(team, {"project memory", "user memory"})

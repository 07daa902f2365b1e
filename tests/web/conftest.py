"""A real server with proposals written by a real MCP client (the SDK over streamable HTTP)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from tests.mcp.conftest import TOKEN, HttpServer, make_store, start_http, stop

XSS = ('<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'
       '<b onmouseover="document.title=\'pwned\'">hover</b>')
PROPOSALS = [
    ("decision", "Releases are cut from the main branch every Tuesday.", ["docs/a.md:1"]),
    ("invariant", "Requests to /billing MUST NOT include the X-Account header.",
     ["docs/b.md:3", 2]),
    ("note", XSS, []),
]


MEMORIES: list[tuple[str, dict[str, object]]] = [
    ("save_memory", {"content": "Prefers short commit messages in the imperative mood.",
                     "category": "preference", "scope": "user", "context": "git"}),
    ("save_memory", {"content": "The staging database is reset every night at 02:00 UTC.",
                     "category": "fact", "scope": "project", "context": "ops"}),
    ("save_memory", {"content": XSS, "category": "instruction", "scope": "user"}),
    ("save_memory", {"content": "Run the linters before every push.", "category": "convention",
                     "scope": "project", "source": "explicit"}),
]
CONTEXT: list[tuple[str, dict[str, object]]] = [
    ("store_context", {"content": "Task: speed up the nightly import job.",
                       "context_type": "task", "run_id": "import"}),
    ("store_iteration_result", {"iteration": 1, "summary": "Profiled the import: 80% of the "
                                "time is spent parsing dates.", "success": True,
                                "run_id": "import"}),
    ("store_iteration_result", {"iteration": 2, "summary": "Cached the date parser; the job "
                                "crashed on an empty file.", "success": False,
                                "error": "IndexError on an empty file", "run_id": "import"}),
    ("store_context", {"content": f"Output of the failing run: {XSS}",
                       "context_type": "output", "run_id": "import"}),
    ("store_context", {"content": "Skill: check for empty input files before parsing.",
                       "context_type": "skill", "tags": ["parsing"], "run_id": "import"}),
]


@dataclass
class Site:
    server: HttpServer
    store: Path
    base: str
    proposals: list[int]
    memories: list[str]
    """Ids of ``MEMORIES``, saved as the server's own actor (the shared token's)."""


async def _propose(url: str, token: str = TOKEN) -> list[int]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    out: list[int] = []
    with anyio.fail_after(60):
        return await _write_and_propose(http, url, out)


def write_and_propose(url: str, token: str) -> list[int]:
    """Write ``PROPOSALS`` to delta and propose each, as the actor of ``token``; their
    proposal ids."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, _propose, url, token).result(timeout=90)


async def _write_and_propose(http: httpx.AsyncClient, url: str, out: list[int]) -> list[int]:
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        for kind, text, sources in PROPOSALS:
            w = await client.call_tool("agents_context_write", {
                "content": text, "kind": kind, "confidence": 0.7, "sources": sources,
                "scope": "delta"})
            assert not w.is_error, w
            cid = w.structured_content["id"]
            p = await client.call_tool("agents_context_propose", {"context_id": cid})
            assert not p.is_error, p
            out.append(p.structured_content["proposal_id"])
    return out


def start_site(tmp_path: Path) -> Site:
    store = make_store(tmp_path / "store")
    docs = store / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Releases: every Tuesday from main.\n")
    (docs / "b.md").write_text("# Billing\n\nAll billing calls need X-Account.\n")
    server = start_http(store)
    try:
        # In a thread of its own: Playwright's sync client keeps a loop on this one.
        ids = write_and_propose(server.url, TOKEN)
        saved = call_tools(server.url, TOKEN, [*MEMORIES, *CONTEXT])
    except BaseException:
        stop(server.process)
        raise
    return Site(server, store, server.url.removesuffix("/mcp"), ids,
                [str(m["id"]) for m in saved[:len(MEMORIES)]])


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    s = start_site(tmp_path)
    yield s
    stop(s.server.process)


OPEN: list[httpx.Client] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while OPEN:
        OPEN.pop().close()


def client(base: str) -> httpx.Client:
    """An HTTP client closed after the test."""
    c = httpx.Client(base_url=base, timeout=30, follow_redirects=False)
    OPEN.append(c)
    return c


def sign_in(base: str, reviewer: str, token: str = TOKEN) -> httpx.Client:
    """An HTTP client holding a session, signed in through the form like a browser."""
    c = client(base)
    page = c.get("/ui/login")
    nonce = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert nonce, page.text
    r = c.post("/ui/login", data={"csrf": nonce.group(1), "token": token,
                                  "reviewer": reviewer}, headers={"Origin": base})
    assert r.status_code == 303, r.text
    return c


def csrf_of(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, html
    return m.group(1)


async def _calls(url: str, token: str, calls: list[tuple[str, dict[str, object]]]
                 ) -> list[dict[str, object]]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    out: list[dict[str, object]] = []
    with anyio.fail_after(60):
        async with http, Client(streamable_http_client(url, http_client=http)) as c:
            for name, args in calls:
                r = await c.call_tool(name, args)
                assert not r.is_error, (name, r)
                out.append(dict(r.structured_content or {}))
    return out


def call_tools(url: str, token: str, calls: list[tuple[str, dict[str, object]]]
               ) -> list[dict[str, object]]:
    """Call MCP tools as the actor of ``token`` with the SDK client; their results."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, _calls, url, token, calls).result(timeout=90)

"""The commands over a PostgreSQL store (``--store``, SEDIMENT_STORE, sediment.toml), and
``sediment serve --store`` driven by the real MCP client over stdio."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import anyio
import httpx
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from sediment.pg import PgStore, push
from sediment.store import LayerSet
from tests import zygote
from tests.conftest import Runner
from tests.mcp.conftest import SEDIMENT, TOKEN, free_port, stop
from tests.pg.layers import DIM, build_layers

ENV = {"SEDIMENT_EMBED_DIM": str(DIM)}


def _pushed(pg_url: str, tmp_path: Path) -> None:
    with PgStore(pg_url) as store:
        push(store, LayerSet.from_directory(build_layers(tmp_path)))


def test_write_search_layers_propose_accept(sediment: Runner, pg_url: str,
                                            tmp_path: Path) -> None:
    _pushed(pg_url, tmp_path)
    w = sediment("write", "--store", pg_url, "--kind", "note", "--content",
                 "Team servers keep many writers in one PostgreSQL project.",
                 "--confidence", "0.8", "--json", env=ENV)
    assert w.code == 0, w.err
    new_id = w.json()["id"]
    assert "project default" in w.json()["path"]
    hits = sediment("search", "--store", pg_url, "many writers PostgreSQL", "--json",
                    env=ENV).json()["results"]
    assert hits[0]["id"] == new_id
    layers = sediment("layers", "--store", pg_url, "--json").json()
    assert [(r["layer"], r["chunks"]) for r in layers["layers"]] == [  # + the write's event
        ("local", 3), ("user", 1), ("delta", 1), ("base", 8)]
    assert layers["schema"]["dim"] == DIM
    p = sediment("propose", "--store", pg_url, str(new_id), "--json")
    assert p.code == 0, p.err
    pid = p.json()["proposal_id"]
    listed = sediment("proposals", "list", "--store", pg_url, "--json").json()
    assert [(v["proposal_id"], v["status"]) for v in listed] == [(pid, "pending")]
    ok = sediment("proposals", "accept", "--store", pg_url, str(pid), "--json")
    assert ok.code == 0, ok.err
    after = sediment("proposals", "list", "--store", pg_url, "--status", "accepted", "--json")
    assert [v["proposal_id"] for v in after.json()] == [pid]
    gone = sediment("forget", "--store", pg_url, "5", "--reason", "old", "--json")
    assert gone.json()["layer"] == "user"


def test_the_store_comes_from_the_environment_or_the_user_config(
        sediment: Runner, pg_url: str, tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    _pushed(pg_url, tmp_path / "x")
    by_env = sediment("layers", "--json", env={"SEDIMENT_STORE": pg_url})
    assert by_env.json()["layers"][3]["chunks"] == 8
    project = tmp_path / "proj"
    project.mkdir()
    Path(os.environ["SEDIMENT_USER_CONFIG"]).write_text(f'[store]\nurl = "{pg_url}"\n')
    by_config = sediment("layers", "--json", cwd=project)
    assert by_config.json()["layers"][3]["chunks"] == 8
    files = sediment("layers", "--json", "--dir", str(tmp_path / "x"), cwd=project)
    assert "project" not in files.json()["layers"][3]["path"]
    (project / "sediment.toml").write_text(f'[store]\nurl = "{pg_url}"\n')
    refused = sediment("layers", "--json", cwd=project)
    assert refused.code == 1 and "store.url may not be set" in refused.err


def test_store_and_dir_together_is_a_usage_error(sediment: Runner, pg_url: str,
                                                 tmp_path: Path) -> None:
    r = sediment("search", "--store", pg_url, "--dir", str(tmp_path), "x")
    assert r.code == 2 and "name two stores" in r.err


def test_another_project_is_empty_and_separate(sediment: Runner, pg_url: str,
                                               tmp_path: Path) -> None:
    _pushed(pg_url, tmp_path)
    other = pg_url.replace("?", "?project=other&", 1)
    missing = sediment("layers", "--store", other, "--json")
    assert missing.code == 1 and "has no project 'other' (projects: default)" in missing.err
    (tmp_path / "other").mkdir()
    _pushed(other, tmp_path / "other")  # push creates the project
    w = sediment("write", "--store", other, "--kind", "note", "--content", "only in other",
                 "--confidence", "0.5", env=ENV)
    assert w.code == 0, w.err
    hits = sediment("search", "--store", pg_url, "only in other", "--mode", "lexical",
                    "--json", env=ENV).json()["results"]
    assert all("only in other" not in h["content"] for h in hits)


def test_an_unreachable_store_is_one_error_line(sediment: Runner, tmp_path: Path) -> None:
    r = sediment("search", "--store", f"postgresql://x@/db?host={tmp_path}&port=1", "q")
    assert r.code == 1 and r.err.startswith("Error: store ") and "Traceback" not in r.err


def test_serve_over_mcp_with_a_store(pg_url: str, tmp_path: Path) -> None:
    _pushed(pg_url, tmp_path)
    params = StdioServerParameters(command=zygote.script(SEDIMENT), args=[
        "serve", "--store", pg_url, "--embedder", "hash", "--no-warm-up"],
        env={**os.environ, **ENV})

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                assert {"agents_search", "agents_context_write",
                        "agents_context_propose"} <= tools
                w = await client.call_tool("agents_context_write", {
                    "content": "Served from PostgreSQL over MCP.", "kind": "note",
                    "confidence": 0.9, "scope": "local"})
                assert not w.is_error, w.content
                new_id = w.structured_content["id"]
                s = await client.call_tool("agents_search", {"query": "served from PostgreSQL"})
                assert s.structured_content["results"][0]["id"] == new_id
                p = await client.call_tool("agents_context_propose", {"context_id": new_id})
                assert not p.is_error and p.structured_content["copied_to_delta"]
                layer = (await client.read_resource("agentsdb://layers/delta")).contents[0]
                assert '"chunks": 3' in layer.text  # type: ignore[union-attr]

    anyio.run(main)


def test_the_http_api_over_a_store(pg_url: str, tmp_path: Path) -> None:
    _pushed(pg_url, tmp_path)
    port = free_port()
    proc = subprocess.Popen(
        [zygote.script(SEDIMENT),
         "serve", "--transport", "http", "--port", str(port), "--store", pg_url,
         "--embedder", "hash", "--no-warm-up"],
        env={**os.environ, **ENV, "SEDIMENT_TOKEN": TOKEN}, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=30,
                          headers={"Authorization": f"Bearer {TOKEN}"}) as api:
            deadline = time.monotonic() + 30
            while True:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                try:
                    if api.get("/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
            w = api.post("/tools/agents_context_write", json={
                "content": "Written over HTTP into PostgreSQL.", "kind": "note",
                "confidence": 0.8, "scope": "delta"})
            assert w.status_code == 200, w.text
            s = api.post("/tools/agents_search", json={"query": "written over HTTP", "k": 3})
            assert s.status_code == 200, s.text
            assert "Written over HTTP" in s.text
            page = api.get("/ui/queue")  # the web page is served over a store too
            assert page.status_code == 303 and page.headers["location"].startswith("/ui/login")
    finally:
        stop(proc)

"""A PostgreSQL outage seen through MCP (issue 30 item 2): an official-SDK session open
across a SIGKILL and restart of the database gets tool results with ``isError`` naming
the store and what failed while it is down, and works again afterwards on the same
session; the HTTP API keeps answering 503."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio
import httpx
from bench.team_load import Postgres
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from sediment.server.disclosure import UNAVAILABLE
from tests.pg.team import call, mint, seed_project, team_server


def _text(result: Any) -> str:
    return "\n".join(getattr(x, "text", "") for x in result.content)


def test_an_sdk_session_survives_a_database_crash() -> None:
    # not under pytest's temporary root: another pytest session may prune it meanwhile
    tmp_path = Path(tempfile.mkdtemp(prefix="sediment-outage-"))
    pg = Postgres(tmp_path)
    try:
        url = pg.database("outage")
        root = tmp_path / "work"
        root.mkdir()
        seed_project(url, root)
        token = mint(url, "alice", "writer")
        with team_server(url, root) as srv:
            async def session() -> dict[str, Any]:
                seen: dict[str, Any] = {}
                http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
                with anyio.fail_after(120):
                    async with http, Client(streamable_http_client(srv.mcp,
                                                                   http_client=http)) as c:
                        save = {"content": "Deploys go out on Tuesdays.", "category": "fact"}
                        seen["before"] = await c.call_tool("save_memory", save)
                        pg.crash("sigkill")
                        seen["down"] = await c.call_tool("recall_memories",
                                                         {"query": "deploys"})
                        with httpx.Client(base_url=srv.base, timeout=60) as api:
                            seen["api"] = call(api, token, "recall_memories",
                                               {"query": "deploys"})
                        pg.restart()
                        seen["after"] = await c.call_tool("recall_memories",
                                                          {"query": "deploys"})
                return seen

            seen = anyio.run(session)
            log = srv.log.read_text(errors="replace")
    finally:
        pg.stop()
        shutil.rmtree(tmp_path, ignore_errors=True)
    assert not seen["before"].is_error, _text(seen["before"])
    down = _text(seen["down"])
    assert seen["down"].is_error
    assert "team store (PostgreSQL) is unavailable: cannot connect to the database server" \
        in down, down
    assert "outage" not in down and "pgdata" not in down  # never where the store lives
    assert seen["api"].status_code == 503
    assert seen["api"].json()["error"] == {"code": "unavailable", "message": UNAVAILABLE}
    assert not seen["after"].is_error, _text(seen["after"])
    assert "Deploys go out on Tuesdays." in _text(seen["after"])
    assert "cannot connect" in log  # the server's log says why

"""A global-memory proposal that corrects a global memory shows that memory beside it,
with the words that change, on the proposal's page."""

from __future__ import annotations

import re

from tests.conftest import Runner
from tests.mcp.conftest import make_store, start_http, stop
from tests.web.conftest import call_tools, sign_in


def test_the_corrected_global_memory_is_shown_beside_the_proposal(
        tmp_path: object, sediment: Runner) -> None:
    store = make_store(tmp_path / "store")  # type: ignore[operator]
    sediment("memory", "save", "Releases are cut on Mondays.", "--category", "convention",
             "--scope", "global", "--actor", "alice", "--embedder", "hash",
             "--dir", str(store))
    writer = str(sediment("token", "create", "--actor", "bob", "--json").json()["token"])
    server = start_http(store)
    try:
        [saved] = call_tools(server.url, writer, [("save_memory", {
            "content": "Actually releases are cut on Tuesdays, not Mondays.",
            "category": "correction", "scope": "global"})])
        assert saved["status"] == "proposed" and saved.get("corrects_id"), saved
        reviewer = sign_in(server.url.removesuffix("/mcp"), "rita")
        queue = reviewer.get("/ui/queue").text
        pid = re.search(r'href="/ui/proposals/(\d+)"', queue)
        assert pid is not None, queue
        page = reviewer.get(f"/ui/proposals/{pid.group(1)}").text
        assert f"Corrects the global memory {saved['corrects_id']}" in page
        assert "<ins>Tuesdays, not </ins>Mondays." in page, page
    finally:
        stop(server.process)

"""Written ids are unique across a project's layers and every store an actor reads with it
(issue #25, "id allocation"), on the layer files and on a real PostgreSQL.

An actor's user memories live in their own store (on files ``<data dir>/actors/<actor>/``,
shared by every project), project memories and notes in the project's layers, progressive
context in the project's context store. Everything that takes a bare chunk id (``get``,
sources, proposals, resources, export, pushes) would confuse two of them that shared an id,
so one actor's user memory, project memory, context item and note must have four ids, and
each id must name its own thing. Through the Python API (``sediment.open``), the same
services the CLI and the servers run; one database for the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import sediment
from tests.pg.conftest import fresh_database
from tests.pg.team import seed_project

USER_MEMORY = "Alice prefers the xylophone theme in every editor."
PROJECT_MEMORY = "The zanzibar vault of this project opens with code 4711."
CONTEXT_ITEM = "Move the marzipan tables to staging before Friday."
NOTE = "The quokka branch deploys from wip-42."


@pytest.fixture(scope="module")
def pg_module_url(pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fresh_database(pg_server, "ids") as url:
        seed_project(url, tmp_path_factory.mktemp("ids"))
        yield url


@pytest.fixture(params=["files", "pg"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "pg":
        url: str = request.getfixturevalue("pg_module_url")
        return url
    return str(tmp_path)


def test_one_actors_written_ids_name_one_thing_each(location: str) -> None:
    with sediment.open(location, embedder="hash", actor="alice") as alice:
        note = alice.write(NOTE, kind="note", confidence=0.5)
        user = int(alice.save_memory(USER_MEMORY, "preference", scope="user")["chunk_id"])
        project = int(alice.save_memory(PROJECT_MEMORY, "fact", scope="project")["chunk_id"])
        item = int(alice.store_context(CONTEXT_ITEM, "task")["id"].lstrip("c"))
        ids = {"note": note, "user memory": user, "project memory": project,
               "context item": item}
        assert len(set(ids.values())) == 4, ids
        assert all(i >= 2**31 for i in ids.values()), ids

        # a get by each id returns the thing it names or nothing, never another store's
        # (memories and context items are read through their own tools; on PostgreSQL a
        # project memory is a row of ``memories``, not of the project's layers)
        content = {"note": NOTE, "user memory": USER_MEMORY,
                   "project memory": PROJECT_MEMORY, "context item": CONTEXT_ITEM}
        got = {what: alice.get(cid) for what, cid in ids.items()}
        assert got["note"] is not None, got
        for what, chunk in got.items():
            assert chunk is None or chunk.content == content[what], (what, got)

        # the memory tools read each by its stored id, in its own store
        history = {ref: alice.manage_memory("history", memory_id=ref)["memory"]["content"]
                   for ref in (f"u{user}", f"p{project}")}
        assert history == {f"u{user}": USER_MEMORY, f"p{project}": PROJECT_MEMORY}

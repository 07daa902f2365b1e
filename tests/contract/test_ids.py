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
from sediment.errors import NotFoundError
from tests.conftest import Runner
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


def sediment_open(location: str, actor: str) -> sediment.Store:
    return sediment.open(location, embedder="hash", actor=actor)


@pytest.fixture(params=["files", "pg"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "pg":
        url: str = request.getfixturevalue("pg_module_url")
        return url
    return str(tmp_path)


def test_one_actors_written_ids_name_one_thing_each(location: str) -> None:
    with sediment_open(location, "alice") as alice:
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


def test_a_pull_keeps_the_stores_apart(pg_module_url: str, tmp_path: Path,
                                       sediment: Runner) -> None:
    """The server numbers every row of a project from one sequence; a pull writes the
    project's layers, the actor's context and the actor's own memories to files, where each
    store numbers on from its own ids: what the files write next must not take an id a
    pulled row has (on the old code the next note got the pulled context item's id)."""
    with sediment_open(pg_module_url, "bob") as bob:
        bob.write("Bob's note on the server.", kind="note", confidence=0.5)
        bob.store_context(CONTEXT_ITEM, "task")
        bob.save_memory(USER_MEMORY, "preference", scope="user")
    copy = tmp_path / "copy"
    copy.mkdir()
    r = sediment("pull", "--store", pg_module_url, "--dir", str(copy), "--context",
                 "--user-memories", "--actor", "bob")
    assert r.code == 0, r.err
    with sediment_open(str(copy), "bob") as bob:
        ids = {"note": bob.write(NOTE, kind="note", confidence=0.5),
               "project memory": int(bob.save_memory(PROJECT_MEMORY, "fact",
                                                     scope="project")["chunk_id"]),
               "context item": int(bob.store_context("Second task.", "task")["id"][1:]),
               "user memory": int(bob.save_memory("Bob reads diffs in split view.",
                                                  "preference", scope="user")["chunk_id"])}
        items = bob.relevant_context("tables staging task", max_items=10,
                                     min_score=0.0)["items"]
        memories = bob.manage_memory("list")["memories"]
        layers = [c.id for name in bob.layerset.present()
                  for c, _ in bob.layerset.chunks(name)]
    contents = {i["content"]: int(i["id"][1:]) for i in items}
    assert set(contents) == {CONTEXT_ITEM, "Second task."}, items
    assert {m["content"] for m in memories} >= {USER_MEMORY, PROJECT_MEMORY}, memories
    every = layers + list(contents.values()) + [
        int(m["chunk_id"]) for m in memories if m["scope"] == "user"]
    assert len(every) == len(set(every)), sorted(every)
    assert set(ids.values()) <= set(every), (ids, sorted(every))


DORAS = "Dora's yurt key hides under the walrus statue."


def test_a_project_memory_reads_alike_by_its_id_on_both_backends(location: str) -> None:
    """A project memory (and its events) is read by its handle through the memory tools,
    never by a bare chunk id: the team server keeps it in the actor's rows, outside the
    project's layers, so every read by id (``get``, ``agents_read_chunk`` and the chunk
    resources, ``agents_get``, ``propose``, a write's or a memory's sources, the sources the
    queue shows, a human's ``forget`` and ``promote`` by id) answers the same absence on the
    files, for its owner and for anyone else.
    On the old code the files gave the owner the memory (``get``, cited as a source, shown
    in the queue), named it "an actor's memory" to everyone, accepted it as a source, and
    let ``promote --from local`` copy it to the user layer, where everyone reads it."""
    from sediment.errors import NotFoundError, ValidationError
    from sediment.review.decisions import promote
    from sediment.review.provenance import inspect_stored
    from sediment.store import LayerName, NewChunk

    with sediment_open(location, "dora") as dora, sediment_open(location, "eve") as eve:
        saved = dora.save_memory(DORAS, "fact", scope="project")
        mem = int(saved["chunk_id"])
        for who in (dora, eve):  # the memory and the events of its commit, nothing after
            assert [who.get(i) for i in range(mem, mem + 3)] == [None] * 3, who.actor
        # a chunk citing the memory, written below the checks of a write (as an import or
        # an older version could have): the queue must show it alike
        vec = dora.embedder.embed(["See the cited memory."])
        [citing] = dora.layerset.append(
            LayerName.DELTA, [NewChunk("note", "See the cited memory.", "mcp", 0.5, (mem,))],
            vec, profile=dora.embedder.profile.to_dict())
        for who in (dora, eve):
            actor = who.actor
            service = who.workspace.service
            for layer, said in ((None, f"no chunk {mem} in any layer"),
                                ("local", f"no chunk {mem} in the local layer")):
                with pytest.raises(NotFoundError) as err:
                    service.read_chunk(mem, layer, actor)
                assert str(err.value) == said, (actor, layer)
            with pytest.raises(NotFoundError) as err:
                who.propose(mem)
            assert "(found in no layer you can read)" in str(err.value), actor
            with pytest.raises(NotFoundError, match=f"no chunk {mem} in any layer"):
                who.forget(mem, reason="By its id.")
            with pytest.raises(NotFoundError, match=f"not in the local layer .*: {mem}$"):
                promote(who.layerset, [mem], source=LayerName.LOCAL)
            with pytest.raises(ValidationError, match=f"chunk {mem} does not exist"):
                who.write("Cites the memory.", kind="note", confidence=0.5, sources=[mem])
            with pytest.raises(ValidationError, match=f"chunk {mem} does not exist"):
                who.save_memory("Relates to the memory.", "fact", scope="project",
                                related_to=[mem])
            for viewer in (actor, None):
                report = inspect_stored(who.layerset, LayerName.DELTA, citing,
                                        viewer=viewer)
                [source] = report.sources
                assert (source.found, source.chunk, source.note) == (
                    False, None, "not in any layer you may read"), (actor, viewer, source)
        # its owner reads it by its handle
        history = dora.manage_memory("history", memory_id=saved["id"])["memory"]
        assert history["content"] == DORAS
        with pytest.raises(NotFoundError, match="no such memory"):
            eve.manage_memory("history", memory_id=saved["id"])


def test_an_actor_forgets_only_what_they_may_read(location: str) -> None:
    """``Store.forget`` as bob of alice's local note or project memory answers "no chunk",
    as ``get`` does, and writes nothing: it hid her note from her own search (and on files
    her memory from her own recall) and told bob the id existed."""
    with sediment_open(location, "alice") as alice:
        note = alice.write(NOTE, kind="note", confidence=0.5)
        memory = int(alice.save_memory(PROJECT_MEMORY, "fact", scope="project")["chunk_id"])
    with sediment_open(location, "bob") as bob:
        for cid in (note, memory):
            with pytest.raises(NotFoundError, match=f"no chunk {cid} in any layer"):
                bob.forget(cid, reason="not needed")
    with sediment_open(location, "alice") as alice:
        assert note in [h.id for h in alice.search(NOTE, k=50, mode="lexical")]
        recalled = alice.recall("zanzibar vault code", min_score=0.0)["memories"]
        assert PROJECT_MEMORY in [m["content"] for m in recalled], recalled
        assert alice.forget(note, reason="done with it").context_id == note

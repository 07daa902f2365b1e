"""One contract, two backends: every test here runs against the layer files and against a
PostgreSQL project holding the same layers (pushed from them), through the same services.
A behaviour that exists in one backend only fails here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sediment.embed.hashing import HashEmbedder
from sediment.errors import NotFoundError, PermissionDeniedError, SchemaMismatchError
from sediment.ops import SearchOptions, WriteRequest, parse
from sediment.ops.forget import forget
from sediment.ops.service import ContextService
from sediment.pg import PgStore
from sediment.pg.transfer import push
from sediment.review.decisions import AlreadyDecided, accept, list_proposals, promote, reject
from sediment.store import HUMAN_WRITABLE, LayerName, LayerSet, LayerStore, NewChunk
from sediment.store.ids import WRITTEN_START
from tests.pg.layers import BASE_TEXTS, DIM, EMBEDDER, build_layers


def open_backend(kind: str, directory: Path, request: pytest.FixtureRequest) -> LayerStore:
    if kind == "files":
        return LayerSet.from_directory(directory)
    store = PgStore(request.getfixturevalue("pg_url"))
    push(store, LayerSet.from_directory(directory))
    request.addfinalizer(store.close)
    return store


@pytest.fixture(params=["files", "pg"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LayerStore]:
    yield open_backend(request.param, build_layers(tmp_path), request)


def service(store: LayerStore) -> ContextService:
    return ContextService(store, EMBEDDER, root=None, rerankers=())


def search(store: LayerStore, query: str, **kw: Any) -> list[dict[str, Any]]:
    params = parse(SearchOptions, {"query": query, "k": 10, **kw})
    return service(store).search(params, None)["results"]  # type: ignore[no-any-return]


def write(store: LayerStore, text: str, scope: str = "local") -> int:
    req = parse(WriteRequest, {"content": text, "kind": "note", "confidence": 0.7,
                               "scope": scope})
    return int(service(store).write(req, "tester")["id"])


# -- layers and precedence ------------------------------------------------------------------
def test_present_layers_and_summaries(backend: LayerStore) -> None:
    assert backend.present() == [LayerName.LOCAL, LayerName.USER, LayerName.DELTA,
                                 LayerName.BASE]
    base = backend.summary(LayerName.BASE)
    assert base is not None
    assert (base.chunks, base.dim, base.element_type) == (8, DIM, "f32")
    assert base.first_ids == tuple(range(1, 9))
    assert base.profile == EMBEDDER.profile.to_dict()
    assert service(backend).layer_summary("user", None)["chunks"] == 1
    with pytest.raises(NotFoundError):
        backend.vector(LayerName.USER, 5)


def test_precedence_resolves_the_highest_layer(backend: LayerStore) -> None:
    got = service(backend).read_chunk(2, None, None)
    assert got["layer"] == "user" and "sediment compile" in got["content"]
    assert [h["layer"] for h in got["hidden_versions"]] == ["base"]
    assert service(backend).read_chunk(2, "base", None)["content"] == BASE_TEXTS[1]
    assert [n for n, _ in backend.versions(3)] == [LayerName.DELTA, LayerName.BASE]


def test_search_shows_the_winning_version_and_its_conflict(backend: LayerStore) -> None:
    hits = search(backend, "where do agents write notes")
    top = {h["id"]: h for h in hits}
    assert top[3]["layer"] == "delta"
    assert [(c["layer"], c["conflict"]) for c in top[3]["conflicts"]] == [("base", True)]
    assert all(h["id"] != 2 or h["layer"] == "user" for h in hits)


@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
def test_search_kind_filter_and_layers(backend: LayerStore, mode: str) -> None:
    notes = search(backend, "notes layer BM25", mode=mode, filters={"kind": ["note"]})
    assert notes and {h["kind"] for h in notes} == {"note"}
    base_only = search(backend, "layer precedence", mode=mode, layers=["base"])
    assert base_only and {h["layer"] for h in base_only} == {"base"}


def test_the_two_backends_rank_alike(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    files = open_backend("files", build_layers(tmp_path), request)
    pg = open_backend("pg", tmp_path, request)
    for mode in ("hybrid", "vector", "lexical"):
        for query in ("layers precedence", "who accepts a proposal", "BM25 keyword search",
                      "deterministic embedder", "ids never reused"):
            a = search(files, query, mode=mode, explain=True)
            b = search(pg, query, mode=mode, explain=True)
            assert [(h["id"], h["layer"]) for h in a] == [(h["id"], h["layer"]) for h in b], \
                (mode, query)
            assert np.allclose([h["score"] for h in a], [h["score"] for h in b], atol=1e-5)
            assert [len(h["conflicts"]) for h in a] == [len(h["conflicts"]) for h in b]


# -- writes and ids -------------------------------------------------------------------------
def test_writes_get_new_ids_above_every_layer(backend: LayerStore) -> None:
    first = write(backend, "A new finding about the search pipeline.")
    second = write(backend, "Another finding, in delta.", scope="delta")
    assert WRITTEN_START + 7 < first < second
    assert backend.chunk(LayerName.DELTA, second) is not None
    assert backend.high_water() >= second
    hits = search(backend, "new finding about the search pipeline")
    assert hits[0]["id"] == first and hits[0]["author"] == "mcp"


def test_the_base_is_never_appended_to(backend: LayerStore) -> None:
    with pytest.raises(PermissionDeniedError, match="immutable"):
        backend.append(LayerName.BASE, [NewChunk("note", "x", "human", 1.0)],
                       EMBEDDER.embed(["x"]), profile=EMBEDDER.profile.to_dict(),
                       allowed=HUMAN_WRITABLE)


def test_an_explicit_id_may_not_repeat_in_its_layer(backend: LayerStore) -> None:
    item = NewChunk("note", "again", "human", 1.0, id=3)
    with pytest.raises(Exception, match="already exists in the delta layer"):
        backend.append(LayerName.DELTA, [item], EMBEDDER.embed(["again"]),
                       profile=EMBEDDER.profile.to_dict(), allowed=HUMAN_WRITABLE)
    ids = backend.append(LayerName.LOCAL, [item], EMBEDDER.embed(["again"]),
                         profile=EMBEDDER.profile.to_dict(), allowed=HUMAN_WRITABLE)
    assert ids == [3]
    assert backend.versions(3)[0][0] is LayerName.LOCAL


def test_another_embedder_is_refused(backend: LayerStore) -> None:
    other = HashEmbedder(32)
    with pytest.raises(SchemaMismatchError):
        backend.append(LayerName.LOCAL, [NewChunk("note", "x", "mcp", 1.0)],
                       other.embed(["x"]), profile=other.profile.to_dict())


# -- proposals, decisions, events ------------------------------------------------------------
def test_propose_accept_reject_promote(backend: LayerStore) -> None:
    svc = service(backend)
    from sediment.ops import ProposeRequest

    local = write(backend, "Proposal one: merge BM25 and vectors by convex fusion.")
    p1 = svc.propose(parse(ProposeRequest, {"context_id": local}), "tester")
    assert p1["copied_to_delta"] and p1["from_layer"] == "local"
    again = svc.propose(parse(ProposeRequest, {"context_id": local}), "tester")
    assert again["already_pending"] and again["proposal_id"] == p1["proposal_id"]
    other = write(backend, "Proposal two: drop the lexical side.", scope="delta")
    p2 = svc.propose(parse(ProposeRequest, {"context_id": other}), "tester")
    assert [p.status for p in list_proposals(backend)] == ["pending", "pending"]

    out = accept(backend, [p1["proposal_id"]], "good", reviewer="ada")
    assert out[0].copied and out[0].changed
    assert backend.chunk(LayerName.USER, local) is not None
    rej = reject(backend, [p2["proposal_id"]], "we need keywords")
    assert rej[0].action == "rejected"
    with pytest.raises(AlreadyDecided):
        accept(backend, [p2["proposal_id"]])
    assert accept(backend, [p1["proposal_id"]])[0].changed is False
    states = {p.proposal_id: p.status for p in list_proposals(backend)}
    assert states == {p1["proposal_id"]: "accepted", p2["proposal_id"]: "rejected"}

    promoted = promote(backend, [3])
    assert promoted[0].copied
    assert backend.get(3)[0] is LayerName.USER  # type: ignore[index]
    kinds = [e.kind for e in backend.events()]
    assert kinds.count("meta.proposal_event") == 2
    assert kinds.count("meta.proposal_decision") == 3


def test_forget_hides_a_chunk_from_search(backend: LayerStore) -> None:
    assert 5 in [h["id"] for h in search(backend, "vector similarity BM25 keyword")]
    done = forget(backend, 5, "outdated", author="human")
    assert done.layer is LayerName.USER and not done.already
    assert 5 not in [h["id"] for h in search(backend, "vector similarity BM25 keyword")]
    assert forget(backend, 5, "again").already
    assert [e.kind for e in backend.events()] == ["meta.forget"]


def test_events_are_the_same_in_both(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    stores = [open_backend("files", build_layers(tmp_path), request),
              open_backend("pg", tmp_path, request)]
    seen = []
    for store in stores:
        promote(store, [3], reason="fine")
        forget(store, 7, "obsolete")
        seen.append([(e.layer, e.kind, e.data, e.chunk.author) for e in store.events()])
    assert seen[0] == seen[1] and len(seen[0]) == 2


def test_a_copy_without_its_decision_and_an_edited_accept(backend: LayerStore) -> None:
    """An accept whose decision commit is missing reads as accepted on both backends (the
    team server checks every pending proposal's copy in one query); an accept with the
    reviewer's edits keeps the agent's text in delta and is not a conflict in the diff."""
    from sediment.ops.propose import propose
    from sediment.review import accept_edited, diff_layers, get_proposal

    a, b, c = (write(backend, t, scope="delta") for t in (
        "Cache keys include the tenant.", "Deploys freze on Fridays.", "Logs rotate daily."))
    pa, pb, pc = (propose(backend, x, actor="tester").proposal_id for x in (a, b, c))
    copy = backend.chunk(LayerName.DELTA, a)
    assert copy is not None
    backend.append(LayerName.USER, [NewChunk(copy.kind, copy.content, "human", 1.0, (a,),
                                             id=a)],
                   EMBEDDER.embed([copy.content]), profile=EMBEDDER.profile.to_dict(),
                   allowed=HUMAN_WRITABLE)
    states = backend.proposals()
    assert (states[pa].status, states[pa].recorded) == ("accepted", False)
    assert states[pb].status == states[pc].status == "pending"
    edited = "Deploys freeze on Fridays."
    out = accept_edited(backend, pb, edited, EMBEDDER.embed([edited])[0], reviewer="alice")
    assert out.changed and get_proposal(backend, pb).decisions[0].reviewer == "alice"
    assert dict(backend.versions(b))[LayerName.USER].content == edited
    assert dict(backend.versions(b))[LayerName.DELTA].content == "Deploys freze on Fridays."
    report = diff_layers(backend)
    assert [d.status for d in report.chunks if d.chunk.id == b] == ["accepted"]
    assert backend.proposals()[pc].status == "pending"

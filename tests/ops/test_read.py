"""Reading documents and sources (``agents_get``, ``agents_sources``): precedence and
search's visibility (no events, no memories, nothing superseded or forgotten)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp import Client
from sediment.embed import HashEmbedder
from sediment.errors import NotFoundError, RequestError
from sediment.format.model import Chunk
from sediment.format.writer import encode_layer
from sediment.ops.forget import forget
from sediment.ops.read import get_document, list_sources, source_matcher
from sediment.ops.requests import SearchOptions, parse
from sediment.ops.service import ContextService
from sediment.server import build_server
from sediment.server.prompts import ServiceContext
from sediment.store import LayerName, LayerSet, NewChunk
from tests.conftest import files_workspace

BASE = [
    (1, "canonical", "# Payments runbook\n\nWhen payments fail, look here.", "runbooks/pay.md:1"),
    (2, "canonical", "Restart the payments worker.", "runbooks/pay.md:5"),
    (3, "canonical", "Page the database team.", "runbooks/pay.md:9"),
    (4, "memory.fact", "Alice's payments password is hunter2.", "runbooks/pay.md:12"),
    (5, "canonical", "Old payments notes.", "runbooks-old/pay.md:1"),
    (6, "note", "A payments note with no file.", 1),
]
SOURCES = [{"name": "project", "type": "filesystem", "prefix": ""},
           {"name": "handbook", "type": "git", "prefix": "handbook"}]


def make(directory: Path) -> LayerSet:
    directory.mkdir(parents=True, exist_ok=True)
    emb = HashEmbedder()
    chunks = [Chunk(i, kind, text, "human", 1.0, 0, (src,)) for i, kind, text, src in BASE]
    chunks.append(Chunk(7, "canonical", "Handbook payments page.", "human", 1.0, 0,
                        ("handbook/pay.md:1",)))
    md = {"v": 1, "embedding_profile": emb.profile.to_dict(), "sources": SOURCES}
    (directory / "AGENTS.db").write_bytes(
        encode_layer(chunks, emb.embed([c.content for c in chunks]), metadata=md))
    layers = LayerSet.from_directory(directory)
    override = NewChunk("canonical", "Restart the payments worker, then drain the queue.",
                        "human", 1.0, ("runbooks/pay.md:5",), id=2)
    layers.append(LayerName.LOCAL, [override], emb.embed([override.content]),
                  profile=emb.profile.to_dict())
    forget(layers, 3, "obsolete", allowed=(LayerName.LOCAL,))
    return layers


@pytest.fixture
def layers(tmp_path: Path) -> LayerSet:
    return make(tmp_path / "store")


def test_get_gives_the_whole_document_by_precedence(layers: LayerSet) -> None:
    doc = get_document(layers, 1)
    assert (doc["id"], doc["layer"], doc["title"], doc["path"]) == (
        1, "base", "Payments runbook", "runbooks/pay.md")
    assert doc["body"] == ("# Payments runbook\n\nWhen payments fail, look here.\n\n"
                           "Restart the payments worker, then drain the queue.")
    assert doc["chunks"] == [{"id": 1, "layer": "base", "kind": "canonical", "line": 1},
                             {"id": 2, "layer": "local", "kind": "canonical", "line": 5}]
    assert get_document(layers, 2)["layer"] == "local"
    assert get_document(layers, 2)["content"].endswith("then drain the queue.")


def test_a_chunk_without_a_file_is_its_own_document(layers: LayerSet) -> None:
    doc = get_document(layers, 6)
    assert (doc["title"], doc["path"], doc["body"]) == (None, None,
                                                        "A payments note with no file.")


@pytest.mark.parametrize("hidden", [3, 4, 999])
def test_get_never_returns_what_search_hides(layers: LayerSet, hidden: int) -> None:
    with pytest.raises(NotFoundError, match=f"no readable chunk {hidden}: "):
        get_document(layers, hidden)


def test_get_never_returns_an_event(layers: LayerSet) -> None:
    [event] = [c for c, _ in layers.chunks(LayerName.LOCAL) if c.kind.startswith("meta.")]
    with pytest.raises(NotFoundError, match="no readable chunk"):
        get_document(layers, event.id)


def test_sources_count_what_may_be_read(layers: LayerSet) -> None:
    out = list_sources(layers)
    local, base = out["layers"]  # in precedence order
    assert (base["name"], base["chunks"], base["sources"]) == ("base", 6, SOURCES)
    assert base["documents"] == [
        {"path": "handbook/pay.md", "source": "handbook", "chunks": 1},
        {"path": "runbooks-old/pay.md", "source": "project", "chunks": 1},
        {"path": "runbooks/pay.md", "source": "project", "chunks": 2}]
    assert (local["name"], local["chunks"]) == ("local", 1)
    assert local["documents"] == [{"path": "runbooks/pay.md", "source": "project",
                                   "chunks": 1}]
    assert "hunter2" not in str(out) and out["truncated"] is False


@pytest.mark.parametrize(("value", "paths"), [
    ("runbooks", {"runbooks/pay.md"}),
    ("runbooks/", {"runbooks/pay.md"}),
    ("runbooks/pay.md", {"runbooks/pay.md"}),
    ("runbook", set()),
    ("handbook", {"handbook/pay.md"}),
    ("project", {"runbooks/pay.md", "runbooks-old/pay.md"}),
])
def test_the_source_filter(layers: LayerSet, value: str, paths: set[str]) -> None:
    keep = source_matcher(layers, value)
    every = {f"{p}:1" for p in ("runbooks/pay.md", "runbooks-old/pay.md", "handbook/pay.md")}
    assert {s.rsplit(":", 1)[0] for s in every if keep((s,))} == paths
    service = ContextService(layers, HashEmbedder())

    def search(k: int) -> list[str]:
        out = service.search(parse(SearchOptions, {"query": "payments", "mode": "lexical",
                                                   "k": k, "filters": {"source": value}}), None)
        return [str(r["sources"][0]).rsplit(":", 1)[0] for r in out["results"]]

    assert set(search(10)) == paths
    assert len(search(1)) == min(1, len(paths))


def test_the_tools_over_mcp(layers: LayerSet) -> None:
    server = build_server(files_workspace(layers))

    async def main() -> None:
        async with Client(server) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"agents_get", "agents_sources"} <= names
            got = await client.call_tool("agents_get", {"id": 1})
            assert not got.is_error and got.structured_content is not None
            assert got.structured_content["title"] == "Payments runbook"
            assert got.content[0].text.startswith(  # type: ignore[union-attr]
                "# Payments runbook (runbooks/pay.md)\n[base #1 canonical]")
            for bad, message in [({"id": 4}, "no readable chunk 4"),
                                 ({"id": "1"}, "id: expected an integer"),
                                 ({"id": 1, "x": 2}, "x: is not a known field")]:
                refused = await client.call_tool("agents_get", bad)
                assert refused.is_error
                assert message in refused.content[0].text  # type: ignore[union-attr]
            listed = await client.call_tool("agents_sources", {})
            assert not listed.is_error and listed.structured_content is not None
            assert [la["name"] for la in listed.structured_content["layers"]] == [
                "local", "base"]

    anyio.run(main)


@pytest.fixture(scope="module")
def persona_context(tmp_path_factory: pytest.TempPathFactory) -> ServiceContext:
    return ServiceContext(ContextService(make(tmp_path_factory.mktemp("read") / "store"),
                                         HashEmbedder()))


SCALAR = st.none() | st.booleans() | st.integers(-3, 2000) | st.text(max_size=6)
OPTION = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
FILTERS = st.fixed_dictionaries({}, optional={"source": OPTION, "kind": OPTION, "x": OPTION})


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(opts=st.fixed_dictionaries({}, optional={
    "query": st.sampled_from(["payments", "", "  "]) | st.text(max_size=8),
    "k": OPTION, "limit": OPTION, "mode": st.sampled_from(["keyword", "lexical", "hybrid",
                                                           "vector", "KEYWORD"]) | OPTION,
    "filters": FILTERS | st.just([]) | OPTION, "layers": OPTION, "x": OPTION}))
def test_persona_search_options_give_hits_or_one_request_error(
        persona_context: ServiceContext, opts: dict[str, Any]) -> None:
    """What a persona script can pass to ``context.search``: hits, or one RequestError
    naming the option, never another exception; hidden chunks never come back."""
    try:
        hits = persona_context.search(opts)
    except RequestError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert {h["id"] for h in hits}.isdisjoint({3, 4})
        source = (opts.get("filters") or {}).get("source") if isinstance(
            opts.get("filters"), dict) else None
        if isinstance(source, str) and source.strip():
            keep = source_matcher(persona_context.service.store, source)
            assert all(keep(h["sources"]) for h in hits)

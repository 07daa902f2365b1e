"""The request models: strict types, exact names, limits, and one message per bad field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.errors import RequestError
from sediment.ops.requests import (
    MAX_QUERY_CHARS,
    GetRequest,
    KnowledgeRequest,
    ProposeRequest,
    SearchOptions,
    SearchParams,
    SourcesRequest,
    WriteRequest,
    parse,
)

WRITE = {"content": "c", "kind": "note", "confidence": 0.5}


@pytest.mark.parametrize("model,data,message", [
    (SearchParams, {"query": "x", "k": True}, "k: expected an integer, got true (a boolean)"),
    (SearchParams, {"query": "x", "k": "3"}, "k: expected an integer, got '3' (a string)"),
    (SearchParams, {"query": "x", "k": 3.0}, "k: expected an integer, got 3.0 (a number)"),
    (SearchParams, {"query": "x", "k": 1001}, "k: must be at most 1000 (the maximum)"),
    (SearchParams, {"query": "x", "filters": {"kind": []}}, "filters.kind: must list at least"),
    (SearchParams, {"query": "x", "filters": {"kind": None, "x": 1}},
     "filters.x: is not a known field"),
    (SearchParams, {"query": "x", "layers": ["Base"]}, "layers[0]: must be exactly one of"),
    (SearchParams, {"query": "x" * (MAX_QUERY_CHARS + 1)},
     "query: has 10001 characters; the maximum is 10000"),
    (SearchParams, {"query": 3}, "query: expected a string, got 3 (a number)"),
    (SearchParams, {"query_vec": "[1, 2]"}, "query_vec: expected a list"),
    (SearchParams, {"query_vec": [1, "2"]}, "query_vec[1]: expected a number"),
    (SearchParams, {"query": None}, "give query (a non-empty string) or query_vec"),
    (SearchOptions, {"query": "x", "mode": "Lexical"}, "mode: must be exactly one of"),
    (SearchOptions, {"query_vec": [1.0], "mode": "lexical"}, "cannot drive a lexical search"),
    (SearchOptions, {"query": "x", "fusion": "max"}, "fusion: must be one of convex"),
    (SearchOptions, {"query": "x", "rrf_k": 0.5}, "rrf_k: must be at least 1.0"),
    (SearchOptions, {"query": "x", "explain": 1}, "explain: expected true or false"),
    (WriteRequest, {**WRITE, "confidence": True}, "confidence: expected a number, got true"),
    (WriteRequest, {**WRITE, "confidence": "0.5"}, "confidence: expected a number, got '0.5'"),
    (WriteRequest, {**WRITE, "confidence": -0.1}, "confidence: must be at least 0.0"),
    (WriteRequest, {**WRITE, "scope": "LOCAL"}, "scope: must be exactly one of"),
    (WriteRequest, {**WRITE, "scope": " delta "}, "scope: must be exactly one of"),
    (WriteRequest, {**WRITE, "sources": [0]}, "sources[0]: must be at least 1"),
    (WriteRequest, {**WRITE, "sources": ["a.md:1"] * 65}, "sources: has 65 items; the max"),
    (WriteRequest, {**WRITE, "content": "x" * 100_001},
     "content: has 100001 characters; the maximum"),
    (WriteRequest, {**WRITE, "kind": "meta.note"}, "kind: 'meta.*' kinds are reserved"),
    (WriteRequest, {"content": "c"}, "kind: is required; confidence: is required"),
    (ProposeRequest, {"context_id": True}, "context_id: expected an integer, got true"),
    (ProposeRequest, {"context_id": 2**32}, "context_id: must be at most 4294967295"),
    (ProposeRequest, {"context_id": 1, "target": "User"}, "target: must be exactly one of"),
    (KnowledgeRequest, {"query": "x", "scope": "Module"}, "scope: must be exactly one of"),
    (KnowledgeRequest, {"query": "x", "k": 101}, "k: must be at most 100"),
])
def test_bad_fields_are_named_with_their_rule(model: Any, data: dict[str, Any],
                                              message: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse(model, data)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value) and "pydantic" not in str(caught.value)


def test_good_requests_keep_their_values() -> None:
    p = parse(SearchParams, {"query": "x", "k": 1000, "layers": ["local", "base"],
                             "filters": {"kind": ["note"]}, "query_vec": [1, 0.5]})
    assert (p.k, p.layers, p.kinds, p.query_vec) == (1000, ["local", "base"], ("note",),
                                                     [1.0, 0.5])
    assert p.search_mode == "hybrid" and not p.needs_embedder
    assert parse(SearchParams, {"query_vec": [0.1]}).search_mode == "vector"
    lexical = parse(SearchOptions, {"query": "x", "mode": "lexical"})
    assert lexical.search_mode == "lexical" and not lexical.needs_embedder
    w = parse(WriteRequest, {**WRITE, "confidence": 1, "sources": [3, "a.md:2"]})
    assert w.confidence == 1.0 and w.scope == "local" and w.sources == [3, "a.md:2"]


def test_many_bad_fields_make_one_bounded_line() -> None:
    with pytest.raises(RequestError) as caught:
        parse(SearchParams, {"query_vec": [True] * 5000, "k": "x", "layers": [1, 2]})
    text = str(caught.value)
    assert text.count(";") == 3 and text.endswith("more") and len(text) < 400


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5)
                    | st.floats(allow_nan=False),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12)
FIELDS = st.sampled_from(["query", "k", "filters", "layers", "query_vec", "mode", "kind",
                          "content", "confidence", "sources", "scope", "context_id", "id",
                          "limit", "x"])


@settings(max_examples=300, deadline=None)
@given(model=st.sampled_from([SearchParams, SearchOptions, WriteRequest, ProposeRequest,
                              KnowledgeRequest, GetRequest, SourcesRequest]),
       data=st.dictionaries(FIELDS, JSON, max_size=5))
def test_any_json_arguments_give_a_model_or_one_request_error(model: Any,
                                                             data: dict[str, Any]) -> None:
    """What an MCP client can send: anything JSON. Never another exception."""
    try:
        built = parse(model, data)
    except RequestError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert json.loads(built.model_dump_json()) == json.loads(
            model.model_validate_json(built.model_dump_json()).model_dump_json())


def test_docs_mcp_lists_every_field_of_every_tool() -> None:
    from tests.conftest import REPO

    doc = (REPO / "docs" / "mcp.md").read_text()
    for model in (SearchParams, WriteRequest, ProposeRequest, KnowledgeRequest, GetRequest):
        for name in model.model_fields:
            assert f"| `{name}` |" in doc, (model.__name__, name)
    for name in set(SearchOptions.model_fields) - set(SearchParams.model_fields):
        assert f"`{name}`" in doc, name
    assert f"{MAX_QUERY_CHARS:,} characters" in doc
    assert "| `filters.source` |" in doc

"""One agent's session, run the same way over every transport."""

from __future__ import annotations

from typing import Any

from mcp import Client
from sediment.ops.requests import SearchParams
from sediment.search import MAX_K

TOOLS = {"agents_search", "agents_context_write", "agents_context_propose", "agents_get",
         "agents_sources"}
DOTTED = {"agents.search", "agents.context.write", "agents.context.propose"}
"""The RFC's dotted names: accepted when called, never listed."""

BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("agents_search", {"query": ""}, "query: must be a non-empty string"),
    ("agents_search", {"query": "   "}, "query: must be a non-empty string"),
    ("agents_search", {}, "give query (a non-empty string) or query_vec"),
    ("agents_search", {"query": "x", "k": 0}, "k: must be at least 1, got 0"),
    ("agents_search", {"query": "x", "k": -3}, "k: must be at least 1"),
    ("agents_search", {"query": "x", "k": 100000}, "k: must be at most 1000 (the maximum)"),
    ("agents_search", {"query": "x", "k": "ten"}, "k: expected an integer, got 'ten'"),
    ("agents_search", {"query": "x", "k": True}, "k: expected an integer, got true"),
    ("agents_search", {"query": "x", "k": "5"}, "k: expected an integer, got '5'"),
    ("agents_search", {"query": "x", "k": 2.5}, "k: expected an integer, got 2.5"),
    ("agents_search", {"query": "x", "layers": ["nope"]}, "layers[0]: must be exactly one of"),
    ("agents_search", {"query": "x", "layers": ["LOCAL"]}, "layers[0]: must be exactly one"),
    ("agents_search", {"query": "x", "layers": [" delta "]}, "layers[0]: must be exactly"),
    ("agents_search", {"query": "x", "layers": []}, "layers: must list at least 1"),
    ("agents_search", {"query": "x", "layers": "base"}, "layers: expected a list"),
    ("agents_search", {"query": "x", "filters": {"kind": "invariant"}},
     "filters.kind: expected a list"),
    ("agents_search", {"query": "x", "filters": {"kind": []}},
     "filters.kind: must list at least 1"),
    ("agents_search", {"query": "x", "filters": {"kind": [""]}},
     "filters.kind[0]: must be a non-empty string"),
    ("agents_search", {"query": "x", "filters": {"kinds": ["note"]}},
     "filters.kinds: is not a known field"),
    ("agents_search", {"query": "x", "top_k": 3}, "top_k: is not a known field"),
    ("agents_search", {"query": "x", "filters": {"source": ""}},
     "filters.source: must be a non-empty string"),
    ("agents_search", {"query": "x", "filters": {"source": ["docs"]}},
     "filters.source: expected a string"),
    ("agents_get", {}, "id: is required"),
    ("agents_get", {"id": 0}, "id: must be at least 1, got 0"),
    ("agents_get", {"id": "7"}, "id: expected an integer, got '7'"),
    ("agents_get", {"id": 1, "layer": "base"}, "layer: is not a known field"),
    ("agents_sources", {"all": True}, "all: is not a known field"),
    ("agents_search", {"query_vec": [0.1, 0.2]}, "dims"),
    ("agents_search", {"query_vec": [0.1, True]}, "query_vec[1]: expected a number"),
    ("agents_search", {"query_vec": []}, "query_vec: must list at least 1"),
    ("agents_context_write", {"content": "c", "kind": "note", "confidence": 0.5,
                              "scope": "base"}, "not writable"),
    ("agents_context_write", {"content": "c", "kind": "note", "confidence": 0.5,
                              "scope": "user"}, "not writable"),
    ("agents_context_write", {"content": "c", "kind": "note", "confidence": 0.5,
                              "scope": "LOCAL"}, "scope: must be exactly one of"),
    ("agents_context_write", {"content": "c", "kind": "note", "confidence": 0.5,
                              "scope": " delta "}, "scope: must be exactly one of"),
    ("agents_context_write", {"content": "c", "kind": "note", "confidence": 1.5},
     "confidence: must be at most 1.0"),
    ("agents_context_write", {"content": "c", "kind": "note", "confidence": True},
     "confidence: expected a number, got true (a boolean)"),
    ("agents_context_write", {"content": "c", "kind": "note", "confidence": "0.5"},
     "confidence: expected a number, got '0.5' (a string)"),
    ("agents_context_write", {"content": "", "kind": "note", "confidence": 0.5},
     "content: must be a non-empty string"),
    ("agents_context_write", {"content": "c", "kind": "bad kind!", "confidence": 0.5},
     "kind: use 1-64 letters"),
    ("agents_context_write", {"content": "c", "kind": "meta.x", "confidence": 0.5},
     "kind: 'meta.*' kinds are reserved"),
    ("agents_context_write", {"content": "c", "kind": "note", "confidence": 0.5,
                              "sources": [424242]}, "does not exist"),
    ("agents_context_write", {"content": "c", "kind": "note", "confidence": 0.5,
                              "sources": [True]},
     "sources[0]: expected an integer or a string, got true"),
    ("agents_context_write", {"content": "c", "kind": "note", "confidence": 0.5,
                              "sources": ["no line number"]}, "path:line"),
    ("agents_context_write", {"kind": "note", "confidence": 0.5}, "content: is required"),
    ("agents_context_propose", {"context_id": 1}, "not in the local or delta"),
    ("agents_context_propose", {"context_id": 999999}, "not in the local or delta"),
    ("agents_context_propose", {"context_id": 1, "target": "base"},
     "target: must be exactly one of 'user'"),
    ("agents_context_propose", {"context_id": "x"}, "context_id: expected an integer"),
    ("agents_context_propose", {"context_id": True},
     "context_id: expected an integer, got true (a boolean)"),
    ("agents_context_propose", {"context_id": 0}, "context_id: must be at least 1"),
    ("search_knowledge", {"query": "x", "k": True}, "k: expected an integer, got true"),
    ("search_knowledge", {"query": "x", "scope": "GLOBAL"}, "scope: must be exactly one of"),
    ("search_knowledge", {"query": "x", "exclude_superseded": "false"},
     "exclude_superseded: expected true or false"),
    ("no_such_tool", {}, "no_such_tool"),
]


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def run_flow(client: Client) -> None:
    tools = await client.list_tools()
    assert {t.name for t in tools.tools} >= TOOLS
    assert not {t.name for t in tools.tools} & DOTTED
    by_name = {t.name: t for t in tools.tools}
    for name in ("agents_search", "agents_context_write", "agents_context_propose"):
        schema = by_name[name].input_schema
        assert schema["type"] == "object" and schema["properties"]
    assert by_name["agents_search"].annotations.read_only_hint is True
    search_schema = by_name["agents_search"].input_schema
    assert search_schema["additionalProperties"] is False
    assert search_schema["properties"]["k"] == SearchParams.model_json_schema()["properties"]["k"]
    assert search_schema["properties"]["k"]["maximum"] == MAX_K
    write_schema = by_name["agents_context_write"].input_schema
    assert set(write_schema["required"]) == {"content", "kind", "confidence"}
    assert write_schema["properties"]["scope"]["enum"] == ["base", "user", "delta", "local"]

    r = await client.call_tool("agents_search", {"query": "billing header", "k": 2})
    assert not r.is_error, text_of(r)
    top = r.structured_content["results"][0]
    assert (top["id"], top["layer"], top["kind"]) == (2, "base", "invariant")
    assert top["sources"] == ["docs/b.md:3"] and "X-Account" in text_of(r)

    r = await client.call_tool("agents_context_write", {
        "content": "Billing retries back off for 30 seconds after a 429.",
        "kind": "derived-summary", "confidence": 0.7, "sources": ["src/billing.py:88", 2],
        "scope": "delta"})
    assert not r.is_error, text_of(r)
    new_id = r.structured_content["id"]
    assert r.structured_content["layer"] == "delta"

    r = await client.call_tool("agents.search", {"query": "billing retries back off 429",
                                                 "k": 1, "layers": ["delta"]})
    found = r.structured_content["results"][0]
    assert (found["id"], found["author"], found["confidence"]) == (new_id, "mcp", 0.7)
    assert found["sources"] == ["src/billing.py:88", 2]

    r = await client.call_tool("agents_context_propose", {"context_id": new_id,
                                                          "target": "user"})
    assert not r.is_error, text_of(r)
    proposal = r.structured_content["proposal_id"]
    assert proposal > new_id and not r.structured_content["already_pending"]
    r = await client.call_tool("agents.context.propose", {"context_id": new_id})
    assert r.structured_content["proposal_id"] == proposal
    assert r.structured_content["already_pending"]

    r = await client.call_tool("agents_search", {"query": "proposal", "k": 10,
                                                 "filters": {"kind": ["meta.proposal_event"]}})
    assert [x["id"] for x in r.structured_content["results"]] == [proposal]

    for name, args, message in BAD_CALLS:
        r = await client.call_tool(name, args)
        assert r.is_error, (name, args)
        assert message in text_of(r), (name, args, text_of(r))

    resources = await client.list_resources()
    assert "agentsdb://layers/base" in {str(x.uri) for x in resources.resources}
    templates = await client.list_resource_templates()
    assert "agentsdb://chunks/{chunk_id}" in {t.uri_template for t in
                                              templates.resource_templates}
    chunk = await client.read_resource(f"agentsdb://chunks/{new_id}")
    assert "Billing retries" in chunk.contents[0].text
    layer = await client.read_resource("agentsdb://layers/delta")
    assert '"chunks": 3' in layer.contents[0].text  # the note, who wrote it, its proposal

    r = await client.call_tool("agents_search", {"query": "deploy staging", "k": 1})
    assert not r.is_error and r.structured_content["results"][0]["id"] == 3

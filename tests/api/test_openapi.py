"""The served OpenAPI document matches the real responses: schemathesis generates requests
from it (valid and invalid) and checks every response against it, on a real server."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode, checks

from tests.mcp.conftest import TOKEN, HttpServer

AUTH = {"Authorization": f"Bearer {TOKEN}"}
STORE_DEPENDENT = [checks.positive_data_acceptance]
"""A schema-valid request may still be refused by a rule that needs the store (a query
vector's dimension against the layers', a chunk id that exists): a 400 there is right."""


def load(api_server: HttpServer) -> schemathesis.BaseSchema:
    base = api_server.url.removesuffix("/mcp")
    loaded = schemathesis.openapi.from_url(f"{base}/openapi.json", headers=AUTH)
    # A generated body over 1 MiB is refused with 413 before it is read, which the
    # document lists: a rejection of negative data as right as a 400.
    rejection = loaded.config.checks.negative_data_rejection
    rejection.expected_statuses = [*rejection.expected_statuses, "413"]
    # The two personas that misbehave on purpose answer 408 and 500 by design.
    return loaded.exclude(path_regex="looper|failer")


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_responses_match_the_document(api_server: HttpServer, mode: GenerationMode) -> None:
    """(schemathesis's pytest plugin does not run under this pytest, so each operation's
    strategy is driven with hypothesis directly; the checks are schemathesis's own.)"""
    schema = load(api_server)
    labels = []
    for result in schema.get_all_operations():
        operation = result.ok()
        labels.append(operation.label)

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=10, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(headers=AUTH, excluded_checks=STORE_DEPENDENT)

        check()
    assert "POST /tools/agents_search" in labels and "GET /agents/list" in labels


def test_the_document_lists_every_tool_and_persona(api_server: HttpServer) -> None:
    base = api_server.url.removesuffix("/mcp")
    doc = httpx.get(f"{base}/openapi.json", headers=AUTH, timeout=10).json()
    assert doc["openapi"] == "3.1.0"
    tools = httpx.get(f"{base}/tools/list", headers=AUTH, timeout=10).json()["tools"]
    for t in tools:
        assert f"/tools/{t['name']}" in doc["paths"]
    for name in ("code-reviewer", "onboarding", "incident-responder", "looper", "failer"):
        assert f"/agents/{name}/prompt" in doc["paths"]
    assert "$defs" not in str(doc), "local $defs would not resolve inside the document"


def test_every_status_of_the_error_table_is_documented() -> None:
    """The statuses come from ``errors.py``, the one table every adapter answers from: an
    unreachable store's 503 reaches a tool call on the team server, so it is in the
    document too."""
    from sediment import errors
    from sediment.server.openapi import openapi_document

    doc = openapi_document([("agents_search", "Search.", {"type": "object"}, None)], [])
    documented = doc["paths"]["/tools/agents_search"]["post"]["responses"]
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert str(cls.http_status) in documented, name
        assert cls.error_code in documented[str(cls.http_status)]["description"], name


def test_a_tools_result_is_described_by_its_output_schema() -> None:
    """The MCP tool's output schema (from its pydantic model) is the HTTP result's schema;
    two tools' different models of one name do not overwrite each other."""
    from sediment.server.openapi import openapi_document

    out_a = {"$defs": {"Hit": {"type": "object", "properties": {"id": {"type": "integer"}}}},
             "type": "object", "properties": {"hits": {"type": "array",
                                                       "items": {"$ref": "#/$defs/Hit"}}}}
    out_b = {"$defs": {"Hit": {"type": "object", "properties": {"id": {"type": "string"}}}},
             "type": "object", "properties": {"hit": {"$ref": "#/$defs/Hit"}}}
    doc = openapi_document([("a", "A.", {"type": "object"}, out_a),
                            ("b", "B.", {"type": "object"}, out_b),
                            ("c", "C.", {"type": "object"}, None)], [])

    def result(tool: str) -> Any:
        ok = doc["paths"][f"/tools/{tool}"]["post"]["responses"]["200"]
        return ok["content"]["application/json"]["schema"]["properties"]["result"]

    schemas = doc["components"]["schemas"]
    ref_a = result("a")["properties"]["hits"]["items"]["$ref"]
    ref_b = result("b")["properties"]["hit"]["$ref"]
    assert ref_a != ref_b
    assert schemas[ref_a.rsplit("/", 1)[1]]["properties"]["id"]["type"] == "integer"
    assert schemas[ref_b.rsplit("/", 1)[1]]["properties"]["id"]["type"] == "string"
    assert result("c") == {"type": "object"}
    assert "$defs" not in str(doc)

"""The HTTP API, driven with a plain HTTP client against a real server on 127.0.0.1:
every endpoint and every row of docs/http-api.md's error table."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.mcp.conftest import HttpServer


def error(r: httpx.Response, status: int, code: str) -> str:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    return str(body["error"]["message"])


def test_health(api: httpx.Client) -> None:
    r = api.get("/health")
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_tools_list_and_its_agent_filter(api: httpx.Client) -> None:
    tools = api.get("/tools/list").json()["tools"]
    names = [t["name"] for t in tools]
    assert {"agents_search", "agents_context_write", "search_knowledge"} <= set(names)
    search = next(t for t in tools if t["name"] == "agents_search")
    assert search["input_schema"]["additionalProperties"] is False
    scoped = api.get("/tools/list", params={"agent": "onboarding"}).json()["tools"]
    assert [t["name"] for t in scoped] == ["agents_search", "search_knowledge"]
    assert "ghost" in error(api.get("/tools/list", params={"agent": "ghost"}), 404,
                            "not_found")


def test_call_a_tool(api: httpx.Client) -> None:
    r = api.post("/tools/agents_search", json={"query": "payments runbook", "k": 2})
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert result["query"] == "payments runbook" and len(result["results"]) == 2
    write = api.post("/tools/agents_context_write",
                     json={"content": "Payments 502s came from a full queue.",
                           "kind": "note", "confidence": 0.7, "scope": "delta"})
    assert write.status_code == 200, write.text
    assert write.json()["result"]["layer"] == "delta"


def test_tool_arguments_are_validated_strictly(api: httpx.Client) -> None:
    assert error(api.post("/tools/agents_search", json={"query": "x", "k": "2"}), 400,
                 "bad_request") == "k: expected an integer, got '2' (a string)"
    assert error(api.post("/tools/agents_search", json={"query": "x", "limit": 2}), 400,
                 "bad_request") == "limit: is not a known field"
    assert "give query" in error(api.post("/tools/agents_search", json={}), 400,
                                 "bad_request")


def test_request_errors(api: httpx.Client) -> None:
    error(api.post("/tools/nope", json={}), 404, "not_found")
    error(api.post("/tools/agents_search", content=b"{not json",
                   headers={"content-type": "application/json"}), 400, "bad_request")
    error(api.post("/tools/agents_search", json=[1, 2]), 400, "bad_request")
    error(api.post("/tools/agents_search", content=b'{"query": "x"}',
                   headers={"content-type": "text/plain"}), 415, "unsupported_media_type")
    error(api.post("/tools/agents_search", content=b"x" * (1024 * 1024 + 1),
                   headers={"content-type": "application/json"}), 413, "too_large")
    assert "scope 'base' is not writable" in error(api.post("/tools/agents_context_write", json={
        "content": "x", "kind": "note", "confidence": 0.5, "scope": "base"}), 400,
        "bad_request")


def test_agents_list(api: httpx.Client) -> None:
    agents = {a["name"]: a for a in api.get("/agents/list").json()["agents"]}
    assert set(agents) == {"code-reviewer", "onboarding", "incident-responder", "looper",
                           "failer"}
    assert agents["code-reviewer"] == {
        "name": "code-reviewer",
        "description": "Reviews a change against the project's documented conventions",
        "tools": ["agents_search"], "source": "lua",
        "arguments": [{"name": "area", "description": "What the change touches, e.g. "
                       "errors, tests", "required": False}]}


def test_resolve_a_persona(api: httpx.Client) -> None:
    r = api.post("/agents/incident-responder/prompt",
                 json={"arguments": {"service": "payments-api", "severity": "P1"}})
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert set(result) == {"system", "tools", "messages"}
    assert result["system"].startswith("You are the incident responder for payments-api (P1)")
    assert result["tools"] == ["agents_search", "agents_context_write"]
    assert result["messages"][0]["role"] == "assistant"
    ok = api.post("/agents/onboarding/prompt", json={})
    assert ok.status_code == 200, ok.text


def test_persona_errors(api: httpx.Client, api_server: HttpServer) -> None:
    assert "ghost" in error(api.post("/agents/ghost/prompt", json={}), 404, "not_found")
    assert error(api.post("/agents/incident-responder/prompt", json={"arguments": {}}), 400,
                 "bad_request") == ("persona incident-responder: argument service is "
                                    "required")
    error(api.post("/agents/onboarding/prompt", json={"arguments": {"role": 3}}), 400,
          "bad_request")
    error(api.post("/agents/onboarding/prompt", json={"args": {}}), 400, "bad_request")
    error(api.post("/agents/onboarding/prompt", json={"arguments": []}), 400, "bad_request")
    assert "time limit of 0.5s" in error(api.post("/agents/looper/prompt", json={}), 408,
                                         "timeout")
    assert "kaput" in error(api.post("/agents/failer/prompt", json={}), 500, "agent_error")
    error(api.post("/agents/onboarding/prompt", content=b"{}",
                   headers={"content-type": "application/x-www-form-urlencoded"}), 415,
          "unsupported_media_type")
    assert api.get("/health").status_code == 200
    assert api_server.process.poll() is None


def test_auth_and_origin_rules(api: httpx.Client, api_server: HttpServer) -> None:
    base = api_server.url.removesuffix("/mcp")
    for path in ("/health", "/tools/list", "/agents/list", "/openapi.json"):
        error(httpx.get(base + path, timeout=10), 401, "unauthorized")
        error(api.get(path, headers={"Origin": "http://evil.example"}), 403, "forbidden")
        error(api.get(path, headers={"Host": "evil.example"}), 421, "misdirected")
    error(httpx.post(base + "/agents/onboarding/prompt", json={}, timeout=10), 401,
          "unauthorized")
    assert api.get("/health", headers={"Origin": f"http://localhost:{api_server.port}"}) \
        .status_code == 200


def test_tools_validated_by_the_sdk_answer_400_too(api: httpx.Client) -> None:
    """recall_memories validates with the SDK's model: its pydantic error is a 400 naming
    the field, not a 500 (schemathesis found this)."""
    assert error(api.post("/tools/recall_memories", json={"query": "x", "limit": 47.0}), 400,
                 "bad_request").startswith("limit: expected an integer, got 47.0")


def test_unknown_query_parameters_are_refused(api: httpx.Client) -> None:
    r = api.get("/tools/list", params={"agent": "onboarding", "agnet": "x"})
    assert r.status_code == 400
    assert r.json()["error"]["message"] == ("unknown query parameter 'agnet' "
                                            "(GET /tools/list takes: agent)")
    r = api.get("/health", params={"verbose": "1"})
    assert r.status_code == 400 and "takes: none" in r.json()["error"]["message"]
    assert api.get("/tools/list", params={"agent": "onboarding"}).status_code == 200


@pytest.mark.parametrize("metadata", [{"k\ud800": 1}, {"k": "v\ud800"}, {"k": ["\ud800"]}])
def test_a_lone_surrogate_in_context_metadata_is_a_400(api: httpx.Client,
                                                        metadata: dict[str, object]) -> None:
    """JSON may escape a lone surrogate; metadata (free-form) reached the layer writer
    with it and the answer was a 500 "the server failed"."""
    body = {"content": "A task.", "context_type": "task", "metadata": metadata}
    r = api.post("/tools/store_context", content=json.dumps(body),  # escaped: \\ud800
                 headers={"content-type": "application/json"})
    assert "not valid Unicode" in error(r, 400, "bad_request")

"""The HTTP API's OpenAPI 3.1 document, built from the tools and personas actually served.

Each tool gets its own path with its input schema as the request body and its output
schema as the result (both the MCP tool's own, made from the same pydantic models); pydantic's local
``$defs`` are moved to ``components/schemas`` (a ``#/$defs/...`` reference would otherwise
point at the document's root).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from sediment import __version__, errors
from sediment.agents import PersonaInfo

__all__ = ["openapi_document"]

_ERROR = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["code", "message"],
    "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}
_ARGUMENT = {"type": "object", "required": ["name", "description", "required"], "properties": {
    "name": {"type": "string"}, "description": {"type": "string"},
    "required": {"type": "boolean"}}}
_AGENT = {"type": "object", "required": ["name", "description", "tools", "source", "arguments"],
          "properties": {"name": {"type": "string"}, "description": {"type": "string"},
                         "tools": {"type": "array", "items": {"type": "string"}},
                         "source": {"enum": ["toml", "lua", "python"]},
                         "arguments": {"type": "array",
                                       "items": {"$ref": "#/components/schemas/Argument"}}}}
_PROMPT = {"type": "object", "required": ["result"], "properties": {"result": {
    "type": "object", "required": ["system", "tools", "messages"], "properties": {
        "system": {"type": "string"}, "tools": {"type": "array", "items": {"type": "string"}},
        "messages": {"type": "array", "items": {
            "type": "object", "required": ["role", "content"],
            "properties": {"role": {"enum": ["user", "assistant", "system"]},
                           "content": {"type": "string"}}}}}}}}
_TOOLS = {"type": "object", "required": ["tools"], "properties": {"tools": {
    "type": "array", "items": {"type": "object", "required": ["name", "description",
                                                               "input_schema"],
                               "properties": {"name": {"type": "string"},
                                              "description": {"type": "string"},
                                              "input_schema": {"type": "object"},
                                              "output_schema": {"type": "object"}}}}}}
TRANSPORT_ERRORS = {
    "400": "bad_request: the body is not a JSON object of the tool's arguments",
    "401": "unauthorized: missing or wrong bearer token",
    "403": "forbidden: refused Origin",
    "404": "not_found: no such tool or persona",
    "413": "too_large: the body is larger than 1 MiB",
    "415": "unsupported_media_type: the body is not application/json",
    "421": "misdirected: the Host header names no loopback address",
    "500": "internal_error: the server failed (see its log)",
}
"""What the HTTP layer itself refuses, before any service runs."""


def _error_table() -> dict[str, str]:
    """Every status a service error can answer, from the one table in ``errors.py`` (each
    class's ``http_status`` and ``error_code``), beside the transport's own statuses."""
    raised: dict[tuple[str, str], list[str]] = {}
    for name in errors.__all__:
        cls = getattr(errors, name)
        raised.setdefault((str(cls.http_status), cls.error_code), []).append(name)
    found = dict(TRANSPORT_ERRORS)
    for (status, code), names in sorted(raised.items()):
        line = f"{code}: raised as {', '.join(sorted(names))} (the message says why)"
        found[status] = f"{found[status]}; {line}" if status in found else line
    return dict(sorted(found.items()))


ERRORS = _error_table()
SERVICE_STATUSES = tuple(sorted({str(getattr(errors, n).http_status) for n in errors.__all__}))


def _json(schema: Any) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _errors(*codes: str) -> dict[str, Any]:
    return {c: {"description": ERRORS[c], **_json({"$ref": "#/components/schemas/Error"})}
            for c in ("400", "401", *codes)}


def _hoist(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its local ``$defs`` moved into ``components``; a name another tool's
    schema already took for a different model gets a numbered name of its own."""
    schema = copy.deepcopy(schema)
    defs: dict[str, Any] = schema.pop("$defs", {})
    names: dict[str, str] = {}
    for name, sub in defs.items():
        target, n = name, 1
        while target in components and components[target] != _rewritten(sub, defs, names):
            n += 1
            target = f"{name}{n}"
        names[name] = target

    for name, sub in defs.items():
        components[names[name]] = _rewritten(sub, defs, names)
    return _rewritten(schema, defs, names)  # type: ignore[no-any-return]


def _rewritten(node: Any, defs: dict[str, Any], names: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {k: ("#/components/schemas/" + names.get(v[8:], v[8:])
                    if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/")
                    else _rewritten(v, defs, names))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_rewritten(v, defs, names) for v in node]
    return node


def openapi_document(tools: Iterable[tuple[str, str, dict[str, Any], dict[str, Any] | None]],
                     personas: Iterable[PersonaInfo]) -> dict[str, Any]:
    components: dict[str, Any] = {"Error": _ERROR, "Argument": _ARGUMENT, "Agent": _AGENT}
    paths: dict[str, Any] = {
        "/health": {"get": {"operationId": "health", "responses": {
            "200": {"description": "The server is up", **_json({
                "type": "object", "required": ["status", "version"],
                "properties": {"status": {"const": "ok"}, "version": {"type": "string"}}})},
            **_errors()}}},
        "/tools/list": {"get": {
            "operationId": "tools_list",
            "parameters": [{"name": "agent", "in": "query", "required": False,
                            "schema": {"type": "string"},
                            "description": "Only the tools of this persona"}],
            "responses": {"200": {"description": "The tools served", **_json(_TOOLS)},
                          **_errors("404")}}},
        "/agents/list": {"get": {"operationId": "agents_list", "responses": {
            "200": {"description": "The personas", **_json({
                "type": "object", "required": ["agents"], "properties": {"agents": {
                    "type": "array", "items": {"$ref": "#/components/schemas/Agent"}}}})},
            **_errors()}}},
    }
    for name, description, schema, output in tools:
        paths[f"/tools/{name}"] = {"post": {
            "operationId": f"tool_{name}", "summary": description[:120],
            "requestBody": {"required": True, **_json(_hoist(schema, components))},
            "responses": {"200": {"description": "The tool's result", **_json({
                "type": "object", "required": ["result"], "properties": {
                    "result": _hoist(output, components) if output else {"type": "object"}}})},
                **_errors(*SERVICE_STATUSES, "404", "413", "415")}}}
    for info in personas:
        args = {a.name: {"type": "string", "description": a.description}
                for a in info.arguments}
        paths[f"/agents/{info.name}/prompt"] = {"post": {
            "operationId": f"agent_{info.name}", "summary": info.description[:120],
            "requestBody": {"required": True, **_json({
                "type": "object", "additionalProperties": False, "properties": {"arguments": {
                    "type": "object", "additionalProperties": False, "properties": args,
                    "required": [a.name for a in info.arguments if a.required]}}})},
            "responses": {"200": {"description": "The resolved persona", **_json(_PROMPT)},
                          **_errors(*SERVICE_STATUSES, "404", "413", "415")}}}
    return {"openapi": "3.1.0",
            "info": {"title": "Sediment HTTP API", "version": __version__},
            "components": {"schemas": components,
                           "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
            "security": [{"bearer": []}], "paths": paths}
